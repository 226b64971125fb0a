"""posbench's training-free extenders on a checkpoint (posbench/hf/extenders.py), through transformers'
attention-function registry: an export's per-token log-probabilities under ReRoPE, SelfExtend and
StreamingLLM equal posbench's native variants on the same windows (float64, CPU); on tiny random
checkpoints of every family built for (grouped-query heads, Qwen3's q/k norms, GPT-NeoX's partial rotary,
Mistral's own window, a YaRN-shipped config) an extender set to keep every distance is the checkpoint's own
forward, the default rows stay causal, and posbench-eval-hf scores them; the refusals, one line each."""

import json
from types import SimpleNamespace

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.evaluation.variants import make_variant

transformers = pytest.importorskip("transformers")

from tests.hf.conftest import CONTEXT, save_tiny, tiny_gpt_oss  # noqa: E402
from tests.hf.test_eval_hf import metrics_of, score  # noqa: E402
from tests.hf.test_export import TRAIN_LEN, exported  # noqa: E402

EXTENDERS = ("rerope", "selfextend", "streaming")
# largest per-token difference in log-probability between the HF path and posbench's native variant (float64):
# both rotate with posbench's tables, so only the order of float64 operations differs (measured: 3e-15)
PARITY = 1e-12


def hf_forward(hf, variant, x, train_len):
    from posbench.hf.extenders import check_extended, extended

    with torch.no_grad(), extended(hf, variant, train_len):
        out = hf(input_ids=x, use_cache=False).logits
        check_extended()
    return out


@pytest.mark.parametrize("name", EXTENDERS)
def test_an_extender_through_transformers_is_posbenchs_variant(tmp_path, compose, name):
    model, hf, _ = exported(tmp_path, compose, "rope", "encoding.base=500")
    variant = make_variant(name)
    torch.manual_seed(3)
    for L in (TRAIN_LEN, 4 * TRAIN_LEN, 16 * TRAIN_LEN):
        x = torch.randint(0, 256, (2, L))
        with torch.no_grad():
            ours = model(x, None, variant.options(AttentionOptions(), L, TRAIN_LEN)).log_softmax(-1)
            plain = model(x).log_softmax(-1)
            before = hf(input_ids=x).logits
        theirs = hf_forward(hf, variant, x, TRAIN_LEN).log_softmax(-1)
        assert ours.std() > 0.5  # far from uniform: a wrong rotation would show
        assert (ours - theirs).abs().max() <= PARITY, (name, L)
        if L > TRAIN_LEN:  # the extender changed something, so the agreement is not the plain model's
            assert (ours - plain).abs().max() > 1e-3
        with torch.no_grad():  # the model as it was after the row: its rotary module and attention put back
            assert torch.equal(hf(input_ids=x).logits, before)
    assert hf.config._attn_implementation != "posbench_extender"


YARN = {"rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0,
                            "original_max_position_embeddings": CONTEXT}}
CASES = {  # family, config extras: what each exercises in the unrotated path
    "llama": ("llama", {}),  # grouped-query heads (2 key heads for 4 query heads)
    "qwen2": ("qwen2", {}),
    "qwen3": ("qwen3", {}),  # q/k RMSNorm before the rotation, head_dim 8 set apart from hidden / heads
    "mistral-window": ("mistral", {"sliding_window": 5}),  # the layer's own window kept
    "gpt_neox-partial": ("gpt_neox", {"partial_rotary_factor": 0.25}),  # 2 of 8 channels rotate
    "llama-yarn": ("llama", YARN),  # a shipped scaling: its frequencies and attention factor kept
}


SCALE = 4.0


@pytest.fixture(scope="module")
def family_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("extender-families")
    out = {}
    for case, (family, extra) in CASES.items():
        path = save_tiny(family, root / case, seed=1, **extra)
        model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float64).eval()
        with torch.no_grad():  # matrices scaled up: logits far from uniform, so that a wrong rotation shows
            for p in model.parameters():
                p.mul_(SCALE) if p.dim() == 2 else None
        out[case] = model
    return out


@pytest.mark.parametrize("case", CASES)
def test_an_extender_that_keeps_every_distance_is_the_checkpoints_own_forward(family_models, case):
    """ReRoPE with a window past the longest distance and no log-n is plain RoPE: the unrotated q and k, rotated
    again by posbench's tables, give transformers' own logits (to the float32 rounding of its angles)."""
    hf = family_models[case]
    x = torch.randint(3, 250, (2, 4 * CONTEXT))
    keep_all = make_variant("rerope", {"window": 10**6, "logn": False})
    with torch.no_grad():
        own = hf(input_ids=x).logits
    ours = hf_forward(hf, keep_all, x, CONTEXT)
    assert (ours - own).abs().max() <= 1e-5, case
    clipped = hf_forward(hf, make_variant("rerope", {"window": 2, "logn": False}), x, CONTEXT)
    assert (clipped - own).abs().max() > 1e-4  # a narrower window changes the logits: the rows are not all plain


def test_gpt_oss_keeps_its_sinks_its_windows_and_its_half_width_tables():
    """gpt-oss: a learned sink logit per head in every softmax, sliding and full layers alternating, cos/sin of
    one column per frequency. ReRoPE keeping every distance is the model's own forward (float32: its experts'
    grouped GEMM takes no float64), and StreamingLLM changes it past the cache."""
    hf = tiny_gpt_oss(["sliding_attention", "full_attention"], 5, CONTEXT)
    x = torch.randint(3, 250, (2, 4 * CONTEXT))
    with torch.no_grad():
        own = hf(input_ids=x).logits
    keep_all = hf_forward(hf, make_variant("rerope", {"window": 10**6, "logn": False}), x, CONTEXT)
    assert (keep_all - own).abs().max() <= 1e-4
    streamed = hf_forward(hf, make_variant("streaming"), x, CONTEXT)
    assert (streamed[:, :CONTEXT] - own[:, :CONTEXT]).abs().max() <= 1e-4  # nothing evicted within the cache
    assert (streamed - own).abs().max() > 1e-3


@pytest.mark.parametrize("name", EXTENDERS)
def test_the_rows_stay_causal(family_models, name):
    """A token changed at t moves no logit before t, and some after it, on every family."""
    variant, L, t = make_variant(name), 4 * CONTEXT, 3 * CONTEXT
    for case, hf in family_models.items():
        x = torch.randint(3, 250, (1, L))
        y = x.clone()
        y[0, t] = (x[0, t] + 1) % 250 + 3
        a, b = hf_forward(hf, variant, x, CONTEXT), hf_forward(hf, variant, y, CONTEXT)
        assert torch.equal(a[:, :t], b[:, :t]), (case, name)
        assert (a[:, t:] - b[:, t:]).abs().max() > 1e-6, (case, name)


def test_posbench_eval_hf_scores_the_extender_rows_and_the_scaling_rows_window_controls(tiny_checkpoints, small_corpus,
                                                                                       tmp_path, cache_dir):
    run_dir = score(tiny_checkpoints["qwen3"], tmp_path / "runs", small_corpus, "--extender", "rerope,selfextend,streaming",
                    "--rope-scaling", "yarn", "--window")
    m = metrics_of(run_dir)
    rows = {r["variant"]: r["row"] for r in m["evaluations"]}
    assert set(rows) == {"qwen3", "qwen3+yarn@4x", "qwen3+rerope", "qwen3+selfextend", "qwen3+streaming", "qwen3+swaL",
                         "qwen3+yarn@4x+swaL"}
    assert rows["qwen3+rerope"]["variants"] == [{"variant": "rerope", "window": None, "logn": True}]
    assert [v["variant"] for v in rows["qwen3+yarn@4x+swaL"]["variants"]] == ["rope_scaling", "local"]
    assert all(r["ppl"] is not None for r in m["evaluations"])
    at = {(r["variant"], r["protocol"], r["length"]): r["loss"] for r in m["evaluations"]}
    # the streaming cache holds every key at 1x (nothing evicted yet); ReRoPE clips distances from w = 4 on
    assert at["qwen3+streaming", "nonoverlapping", CONTEXT] == pytest.approx(at["qwen3", "nonoverlapping", CONTEXT], abs=1e-5)
    assert at["qwen3+rerope", "nonoverlapping", CONTEXT] != pytest.approx(at["qwen3", "nonoverlapping", CONTEXT], abs=1e-4)
    assert json.loads((run_dir / "metrics.json").read_text())["status"] == "completed"
    # the report pairs the scaling row with its window control, and lists StreamingLLM with the windowed controls
    from tests.conftest import cli

    cli("posbench.cli.report", str(tmp_path / "runs"), "--out", str(tmp_path / "report"))
    lines = (tmp_path / "report" / "report.md").read_text().splitlines()
    yarn = [line for line in lines if line.startswith("|") and "| qwen3+yarn@4x " in line]  # a cell, in any column
    assert yarn and not any("no window control" in line for line in yarn)
    assert any(line.startswith("- Windowed controls") and "`qwen3+streaming`" in line for line in lines)


# -- refusals, one line each -------------------------------------------------------------------------


def test_refusals(tiny_checkpoints, tmp_path, compose):
    from posbench.hf import checkpoint as checkpoints
    from posbench.hf.extenders import extender_undefined_reason, extenders

    def refused(names, config, family, match):
        with pytest.raises(PosbenchError, match=match) as e:
            extenders(names, config, family)
        assert "\n" not in str(e.value)

    gpt2 = checkpoints.inspect(tiny_checkpoints["gpt2"], device="cpu").config
    refused(["rerope"], gpt2, "gpt2", "--extender rerope: a gpt2 checkpoint has no rotary positions .*llama, mistral")
    llama = checkpoints.inspect(tiny_checkpoints["llama"], device="cpu").config
    refused(["rerope", "dca"], llama, "llama", "--extender dca: unknown; valid: rerope, selfextend, streaming")
    refused(["selfextend"], SimpleNamespace(rope_parameters={"rope_theta": 1e4}), "phi3",
            "not built for phi3 checkpoints .*built for: llama, mistral, qwen2, qwen3, gpt_neox, gpt_oss")
    refused(["streaming"], SimpleNamespace(rope_parameters={"full_attention": {}, "sliding_attention": {}}), "llama",
            "RoPE parameters per layer type")
    refused(["rerope"], SimpleNamespace(rope_parameters={"rope_theta": 1e4, "partial_rotary_factor": 0.0}), "gpt_neox",
            "rotates no channel")
    assert [v.suffix() for v in extenders(["rerope", "streaming", "rerope"], llama, "llama")] == ["+rerope", "+streaming"]
    # StreamingLLM's 4 sinks leave no recent key at a context of 5: a row without scores and the reason
    assert "leave no recent keys at train_len 5" in extender_undefined_reason(make_variant("streaming"), 5)
    assert extender_undefined_reason(make_variant("rerope"), 5) is None


def test_the_command_refuses_an_extender_on_gpt2_in_one_line_and_writes_nothing(tiny_checkpoints, tmp_path):
    from tests.conftest import cli

    proc = cli("posbench.cli.eval_hf", str(tiny_checkpoints["gpt2"]), "--out", str(tmp_path / "runs"),
               "--extender", "rerope", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("posbench: error: --extender rerope: a gpt2 checkpoint")
    assert not (tmp_path / "runs").exists()


# -- the run's lock ----------------------------------------------------------------------------------


def test_a_run_folder_another_process_is_writing_is_refused_in_one_line(tiny_checkpoints, small_corpus, tmp_path,
                                                                         cache_dir):
    from posbench.store.rundir import RunDir

    run_dir = score(tiny_checkpoints["qwen2"], tmp_path / "runs", small_corpus)
    before = (run_dir / "metrics.json").read_bytes()
    with RunDir(run_dir).lock() as mine:  # another open file description: flock refuses it as it would another process
        assert mine
        with pytest.raises(PosbenchError, match=r"is being written by another process \(pid \d+\); wait for it") as e:
            score(tiny_checkpoints["qwen2"], tmp_path / "runs", small_corpus, "--extender", "rerope")
    assert "\n" not in str(e.value)
    assert (run_dir / "metrics.json").read_bytes() == before  # nothing written
    again = score(tiny_checkpoints["qwen2"], tmp_path / "runs", small_corpus, "--extender", "rerope")
    assert again == run_dir and "qwen2+rerope" in {r["variant"] for r in metrics_of(run_dir)["evaluations"]}


def test_a_new_run_folder_that_fails_is_removed(tiny_checkpoints, small_corpus, tmp_path, cache_dir, monkeypatch):
    import posbench.hf.row as row

    def broken(*args, **kwargs):
        raise RuntimeError("scoring failed")

    monkeypatch.setattr(row, "evaluate_checkpoint", broken)
    with pytest.raises(RuntimeError, match="scoring failed"):
        score(tiny_checkpoints["qwen2"], tmp_path / "runs", small_corpus)
    assert list((tmp_path / "runs").iterdir()) == []


def test_a_streaming_cache_without_recent_keys_is_recorded_not_defined(tiny_checkpoints, small_corpus, tmp_path,
                                                                        cache_dir):
    """At a context of 5, StreamingLLM's 4 sinks leave no recent key: its records say why, the others are scored."""
    run_dir = score(tiny_checkpoints["llama"], tmp_path / "runs", small_corpus, "--extender", "streaming,rerope",
                    "--context-length", "5")
    records = metrics_of(run_dir)["evaluations"]
    streaming = [r for r in records if r["variant"] == "llama+streaming"]
    assert streaming and all(r["ppl"] is None and "leave no recent keys at train_len 5" in r["reason"] for r in streaming)
    assert all(r["ppl"] is not None for r in records if r["variant"] != "llama+streaming")
