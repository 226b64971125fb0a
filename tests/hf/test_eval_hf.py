"""posbench-eval-hf: tiny random-weight checkpoints of five transformers families scored with posbench's
protocols into run directories that posbench-report reads; the BOS policy; learned tables past their size
not defined; the HF path's records equal posbench's own on an exported run; the refusals, one line each."""

import json
import math
import shutil

import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.store.rundir import RunDir
from tests.hf.conftest import CONTEXT, FAMILIES, save_tiny, tiny_gpt_oss

EVAL = ["eval.multiples=[1,2,4]", "eval.batch_tokens=512"]


def score(checkpoint, out, corpus, *args):
    from posbench.cli.eval_hf import parse
    from posbench.hf.row import run

    request = parse([str(checkpoint), "--out", str(out), "--no-progress", "--device", "cpu", "data=local",
                     f"data.path={corpus}", *EVAL, *args])
    return run(request)


def metrics_of(run_dir):
    return json.loads((run_dir / "metrics.json").read_text())


@pytest.fixture(scope="module")
def scored(tiny_checkpoints, small_corpus, tmp_path_factory, cache_dir):
    out = tmp_path_factory.mktemp("hf-runs")
    return out, {f: score(tiny_checkpoints[f], out, small_corpus) for f in FAMILIES}


def test_every_family_is_a_run_with_bits_per_byte_on_the_same_bytes(scored):
    _, dirs = scored
    bytes_scored = set()
    for family, run_dir in dirs.items():
        m = metrics_of(run_dir)
        assert m["status"] == "completed" and m["encoding"] == family and m["seed"] == 0
        done = [r for r in m["evaluations"] if r["ppl"] is not None]
        assert {r["protocol"] for r in done} == {"nonoverlapping", "sliding"}
        for r in done:
            # bits per byte: summed nats over ln 2 x the bytes of text scored
            assert r["bpb"] == pytest.approx(r["loss"] * r["tokens_scored"] / (math.log(2) * r["bytes_scored"]))
            assert r["ppl"] == pytest.approx(math.exp(r["loss"]))
            assert len(r["doc_nats"]) == len(m["token_sets"][r["token_set"]]["docs"])
            bytes_scored.add(r["bytes_scored"])
        assert RunDir(run_dir).read_per_position() and RunDir(run_dir).read_token_losses()
    assert len(bytes_scored) == 1  # one tokenizer here, but the bytes are the corpus's, whatever it is


def test_a_learned_table_past_its_size_is_not_defined_with_the_reason(scored):
    _, dirs = scored
    m = metrics_of(dirs["gpt2"])
    assert m["train_len"] == 2 * CONTEXT  # n_positions: the default context length
    past = [r for r in m["evaluations"] if r["length"] > 2 * CONTEXT]
    assert past and all(r["ppl"] is None and r["reason"] == f"learned table has {2 * CONTEXT} positions, window needs "
                        f"{r['length']}" for r in past)


def test_the_report_reads_checkpoint_runs(scored, tmp_path):
    from tests.conftest import cli

    out, _ = scored
    cli("posbench.cli.report", str(out), "--out", str(tmp_path / "report"))
    text = (tmp_path / "report" / "report.md").read_text()
    assert "Tokenizers (bits per byte)" in text and "tiny-llama" in text and "intervals over text only" in text
    assert "## Checkpoints" in text and "hf-tiny-gpt2" in text


def test_posbench_eval_leaves_checkpoint_runs_to_posbench_eval_hf(scored, entry):
    from posbench.cli.evaluate import expanded

    out, dirs = scored
    assert expanded([f"run_dir={out}"]) == [f"run_dir={out}"]  # no posbench run below it: not a sweep over these
    code, err = entry("eval", f"run_dir={dirs['llama']}")
    assert code == 2 and "was made by posbench-eval-hf from a Hugging Face checkpoint" in err.strip().splitlines()[-1]


def test_the_bos_policy_replaces_each_windows_first_input(tiny_checkpoints):
    from posbench.hf import checkpoint as checkpoints
    from posbench.hf.score import WindowForward

    found = checkpoints.inspect(tiny_checkpoints["llama"], device="cpu")
    assert found.bos_id == found.tokenizer.bos_token_id  # llama's tokenizer adds <s>: auto is yes
    assert checkpoints.inspect(tiny_checkpoints["gpt2"], device="cpu").bos_id is None  # gpt2's adds nothing
    assert checkpoints.inspect(tiny_checkpoints["llama"], device="cpu", bos="no").bos_id is None
    ckpt = checkpoints.load(found)
    x = torch.randint(5, 200, (2, 8))
    with torch.no_grad():
        ours = WindowForward(ckpt)(x)
        by_hand = ckpt.model(input_ids=torch.cat([torch.full((2, 1), found.bos_id), x[:, 1:]], 1)).logits
    assert torch.allclose(ours, by_hand)


def test_scoring_again_adds_records_and_keeps_the_others(tiny_checkpoints, small_corpus, tmp_path, cache_dir):
    first = score(tiny_checkpoints["qwen2"], tmp_path, small_corpus)
    n = len(metrics_of(first)["evaluations"])
    again = score(tiny_checkpoints["qwen2"], tmp_path, small_corpus, "--rope-scaling", "yarn,linear")
    assert again == first
    variants = {r["variant"] for r in metrics_of(again)["evaluations"]}
    assert variants == {"qwen2", "qwen2+yarn@4x", "qwen2+linear@4x"} and len(metrics_of(again)["evaluations"]) == 3 * n


def test_the_hf_path_scores_an_export_as_posbench_scores_the_run(tmp_path, compose, small_corpus, cache_dir):
    """posbench's own evaluation of a run and posbench-eval-hf's of its export (bytes, no BOS): the same records."""
    from posbench.data.corpus import DataConfig
    from posbench.data.load import load_corpus
    from posbench.evaluation.perplexity import evaluate_model
    from posbench.evaluation.resolved import resolve_eval
    from posbench.evaluation.scored_text import with_scored_text
    from posbench.evaluation.settings import EvalConfig
    from posbench.hf.export import export
    from tests.hf.test_export import posbench_run

    model, spec = posbench_run(compose, tmp_path / "run", "rope")
    model = model.float()
    corpus = load_corpus(DataConfig(name="local", source="local", path=str(small_corpus), cache_dir=str(cache_dir)))
    ev = with_scored_text(resolve_eval(EvalConfig(multiples=[1, 2, 4], rope_scaling=[]), 16, corpus.fingerprint), corpus)
    native, _ = evaluate_model(model, ev, torch.device("cpu"), progress=False)
    export(tmp_path / "run", tmp_path / "export")
    run_dir = score(tmp_path / "export", tmp_path / "runs", small_corpus, "--bos", "no", "--context-length", "16")
    theirs = {(r["protocol"], r["length"]): r for r in metrics_of(run_dir)["evaluations"]}
    assert len(theirs) == len(native) == 6
    for r in native:
        t = theirs[r["protocol"], r["length"]]
        assert t["tokens_scored"] == r["tokens_scored"] and t["bytes_scored"] == r["bytes_scored"]
        assert t["loss"] == pytest.approx(r["loss"], abs=1e-4) and t["bpb"] == pytest.approx(r["bpb"], abs=1e-4)


# -- refusals, one line each -------------------------------------------------------------------------


def test_refusals(tiny_checkpoints, tmp_path):
    from posbench.hf import checkpoint as checkpoints
    from posbench.hf.scalings import scalings

    def refused(path, match, **kw):
        with pytest.raises(PosbenchError, match=match) as e:
            checkpoints.inspect(path, device="cpu", **kw)
        assert "\n" not in str(e.value)

    refused(tmp_path / "nothing", "is not a folder")
    (tmp_path / "empty").mkdir()
    refused(tmp_path / "empty", "no config.json")
    no_tok = tmp_path / "no-tok"
    shutil.copytree(tiny_checkpoints["llama"], no_tok)
    for f in no_tok.glob("tokenizer*"):
        f.unlink()
    refused(no_tok, "no tokenizer")
    bert = tmp_path / "vit"
    shutil.copytree(tiny_checkpoints["llama"], bert)
    (bert / "config.json").write_text(json.dumps({"model_type": "vit"}))
    refused(bert, r"not a causal LM .*supported: any model type of AutoModelForCausalLM \(tested: llama")
    remote = tmp_path / "remote"
    shutil.copytree(tiny_checkpoints["llama"], remote)
    cfg = json.loads((remote / "config.json").read_text())
    (remote / "config.json").write_text(json.dumps({**cfg, "model_type": "mine", "auto_map": {"AutoModelForCausalLM": "m.M"}}))
    refused(remote, "--trust-remote-code")
    refused(tiny_checkpoints["llama"], "unknown dtype 'fp8'", dtype="fp8")
    refused(tiny_checkpoints["llama"], "unknown BOS policy", bos="maybe")
    with pytest.raises(PosbenchError, match="gpt2 checkpoint has no rotary positions"):
        scalings(["yarn"], None, 16, False, "gpt2")
    from types import SimpleNamespace

    from posbench.hf.scalings import Scaling, check_scalable

    gemma3 = SimpleNamespace(rope_parameters={"full_attention": {"rope_type": "default"}, "sliding_attention": {}})
    with pytest.raises(PosbenchError, match="RoPE parameters per layer type"):
        check_scalable(gemma3, [Scaling("yarn", 4.0)])
    with pytest.raises(PosbenchError, match="ntk: not available through transformers.*valid: linear, dynamic_ntk, yarn, llama3"):
        scalings(["ntk"], None, 16, True, "llama")


def test_posbench_only_settings_and_unknown_keys_are_refused(tiny_checkpoints):
    from posbench.cli.eval_hf import parse

    with pytest.raises(PosbenchError, match="eval.rope_scaling is a setting of posbench's own models; .* --rope-scaling"):
        parse([str(tiny_checkpoints["llama"]), "eval.rope_scaling=[yarn]"])
    with pytest.raises(PosbenchError, match="unknown setting eval.multiple; valid: "):
        parse([str(tiny_checkpoints["llama"]), "eval.multiple=[1,2]"])
    with pytest.raises(PosbenchError, match="unknown corpus data=nope; valid: .*stdlib"):
        parse([str(tiny_checkpoints["llama"]), "data=nope"])


def test_the_command_refuses_in_one_line_and_writes_nothing(tiny_checkpoints, tmp_path):
    from tests.conftest import cli

    proc = cli("posbench.cli.eval_hf", str(tiny_checkpoints["gpt2"]), "--out", str(tmp_path / "runs"),
               "--rope-scaling", "yarn", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("posbench: error: --rope-scaling yarn: a gpt2 checkpoint")
    assert not (tmp_path / "runs").exists()


def windowed_and_native(plain, native, W: int, L: int):
    """(plain's logits before, under +swaL of W keys, after; native's) on the same random tokens: the window
    control through the AttentionInterface against a model whose own layers slide."""
    from posbench.hf.window import check_windowed, windowed_model

    x = torch.randint(3, 250, (2, L))
    with torch.no_grad():
        before = plain(input_ids=x).logits
        with windowed_model(plain, W):
            ours = plain(input_ids=x).logits
            check_windowed()
        return before, ours, plain(input_ids=x).logits, native(input_ids=x).logits


def test_the_window_control_is_transformers_own_sliding_window(tmp_path):
    """+swaL through the AttentionInterface equals Mistral's native sliding window on the same weights, and
    leaves the model as it was afterwards."""
    import transformers

    W, L = 4, 12
    path = save_tiny("mistral", tmp_path / "m")
    plain = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float64).eval()
    native = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float64,
                                                               sliding_window=W).eval()
    before, ours, after, reference = windowed_and_native(plain, native, W, L)
    assert torch.allclose(ours, reference, atol=1e-10)
    assert not torch.allclose(ours, before, atol=1e-4)  # the window hid something
    assert torch.equal(before, after)


def test_the_window_control_keeps_gpt_oss_s_attention_sinks():
    """gpt-oss adds a learned sink logit per head to every softmax: +swaL on a model whose layers are all full
    equals the same weights with every layer natively sliding (transformers' own eager attention with its sinks)."""
    W, L = 4, 12
    full = tiny_gpt_oss(["full_attention"] * 2, W, 4 * L)
    native = tiny_gpt_oss(["sliding_attention"] * 2, W, 4 * L)
    native.load_state_dict(full.state_dict())
    before, ours, _, reference = windowed_and_native(full, native, W, L)
    assert torch.allclose(ours, reference, atol=1e-5)
    assert not torch.allclose(ours, before, atol=1e-3)  # the window hid something


def test_the_window_control_gives_the_report_its_key_tokens(tiny_checkpoints, small_corpus, tmp_path, cache_dir):
    from tests.conftest import cli

    run_dir = score(tiny_checkpoints["llama"], tmp_path / "runs", small_corpus, "--window")
    m = metrics_of(run_dir)
    at_1x = {r["variant"]: r["loss"] for r in m["evaluations"] if r["multiple"] == 1 and r["protocol"] == "sliding"}
    assert at_1x["llama+swaL"] == pytest.approx(at_1x["llama"], abs=1e-6)  # a window of L keys hides nothing at L
    cli("posbench.cli.report", str(tmp_path / "runs"), "--out", str(tmp_path / "report"))
    assert "## Key tokens" in (tmp_path / "report" / "report.md").read_text()


def test_a_dtype_the_device_cannot_run_is_refused_in_one_line(monkeypatch):
    """The device's own answer decides: a dtype whose test product raises (as float16 did on CPU in older
    torch) is refused, naming the device and float32."""
    from posbench.hf.checkpoint import check_dtype

    assert check_dtype("bfloat16", torch.device("cpu")) == torch.bfloat16

    def no_half(*args, dtype=None, **kw):
        raise RuntimeError(f'"addmm_impl_cpu_" not implemented for {dtype}')

    monkeypatch.setattr(torch, "ones", no_half)
    with pytest.raises(PosbenchError, match=r"dtype float16 cannot run on cpu \(.*not implemented.*\); use float32"):
        check_dtype("float16", torch.device("cpu"))
