"""posbench-export: a posbench rope/nope run as GPTNeoXForCausalLM, whose per-token log-probabilities are
posbench's own (float64, CPU) at 1x and 16x, plain and under the RoPE scalings both paths have; and its
refusals."""

import json

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.store.rundir import RunDir

transformers = pytest.importorskip("transformers")

TRAIN_LEN = 16


def posbench_run(compose, folder, encoding, *extra, scale=4.0):
    """A random-init posbench run directory (checkpoint.pt, metrics.json) of the tiny model: its
    LayerNorms moved off 1 and 0 and its matrices scaled up, so that the logits are far from uniform and
    a wrong mapping of any weight shows."""
    spec = compose(f"encoding={encoding}", "model=tiny", f"train_len={TRAIN_LEN}", *extra)
    model = spec.build_model()  # seeded with the run's seed (0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.add_(torch.randn_like(p) * 0.3) if ".ln" in name or name.startswith("ln_f") else p.mul_(scale)
    folder.mkdir(parents=True)
    RunDir(folder).save_checkpoint(model.state_dict(), spec.resolved())
    (folder / "metrics.json").write_text(json.dumps({"schema_version": 1, "run_id": f"{encoding}_tiny_test",
                                                     "status": "completed", "evaluations": []}))
    return model.double().eval(), spec


def exported(tmp_path, compose, encoding, *extra):
    from posbench.hf.export import export

    model, spec = posbench_run(compose, tmp_path / "run", encoding, *extra)
    out = export(tmp_path / "run", tmp_path / "export")
    hf = transformers.AutoModelForCausalLM.from_pretrained(out, local_files_only=True, dtype=torch.float64).eval()
    return model, hf, out


@pytest.mark.parametrize("encoding,extra", [("rope", ("encoding.base=500",)), ("nope", ())])
def test_export_log_probs_are_posbenchs_at_1x_and_16x(tmp_path, compose, encoding, extra):
    model, hf, out = exported(tmp_path, compose, encoding, *extra)
    assert type(hf).__name__ == "GPTNeoXForCausalLM"
    torch.manual_seed(1)
    for L in (TRAIN_LEN, 16 * TRAIN_LEN):
        x = torch.randint(0, 256, (2, L))
        with torch.no_grad():
            ours = model(x).log_softmax(-1)
            theirs = hf(input_ids=x).logits.log_softmax(-1)
        assert ours.std() > 0.5  # far from uniform (0.17 at init): a wrong weight would show
        assert (ours - theirs).abs().max() <= 1e-5, (encoding, L)
    card = (out / "README.md").read_text()
    assert f"{encoding}_tiny_test" in card and "commit" in card


@pytest.mark.parametrize("scaling,factor", [("linear", 16.0), ("yarn", 16.0), ("llama3", 16.0), ("dynamic_ntk", None)])
def test_a_rope_scaling_through_transformers_is_posbenchs_variant(tmp_path, compose, scaling, factor):
    from posbench.hf.scalings import Scaling, scaled

    model, hf, _ = exported(tmp_path, compose, "rope")
    torch.manual_seed(2)
    for L in (TRAIN_LEN, 16 * TRAIN_LEN):
        x = torch.randint(0, 256, (1, L))
        opts = AttentionOptions(rope=(scaling, factor if factor is not None else max(1.0, L / TRAIN_LEN)))
        with torch.no_grad():
            ours = model(x, None, opts).log_softmax(-1)
            with scaled(hf, Scaling(scaling, factor), TRAIN_LEN):
                theirs = hf(input_ids=x).logits.log_softmax(-1)
            plain = model(x).log_softmax(-1)
        assert (ours - theirs).abs().max() <= 1e-5, (scaling, L)
        if L > TRAIN_LEN:  # the scaling changed something, so the agreement is not the plain row's
            assert (ours - plain).abs().max() > 1e-3


def test_the_byte_tokenizer_ids_are_the_bytes(tmp_path, compose):
    _, _, out = exported(tmp_path, compose, "nope")
    tok = transformers.AutoTokenizer.from_pretrained(out, local_files_only=True)
    text = "def f(x):\n    return 'é' + x  # ok"
    assert tok(text, add_special_tokens=False)["input_ids"] == list(text.encode())
    assert tok.decode(list(text.encode())) == text


@pytest.mark.parametrize("encoding,words", [("alibi", "exportable: rope, nope"), ("learned", "exportable: rope, nope")])
def test_an_encoding_without_a_transformers_class_is_refused_in_one_line(tmp_path, compose, encoding, words):
    from posbench.hf.export import export

    posbench_run(compose, tmp_path / "run", encoding)
    with pytest.raises(PosbenchError, match=words):
        export(tmp_path / "run", tmp_path / "export")
    assert not (tmp_path / "export").exists()


def test_an_existing_folder_is_not_overwritten(tmp_path, compose):
    from posbench.hf.export import export

    posbench_run(compose, tmp_path / "run", "rope")
    (tmp_path / "export").mkdir()
    with pytest.raises(PosbenchError, match="exists"):
        export(tmp_path / "run", tmp_path / "export")


def test_the_command_exports_and_refuses_in_one_line(tmp_path, compose, capsys):
    from posbench.cli.export import main

    posbench_run(compose, tmp_path / "run", "nope")
    main([str(tmp_path / "run"), str(tmp_path / "export")])
    assert (tmp_path / "export" / "config.json").is_file() and (tmp_path / "export" / "model.safetensors").is_file()
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "run"), str(tmp_path / "export")])
    assert exc.value.code == 2 and capsys.readouterr().err.strip().splitlines()[-1].startswith("posbench: error:")


def test_a_bpe_run_exports_with_its_own_tokenizer(tmp_path, compose, small_corpus_for_export):
    """A run of a subword tokenizer (data/tokenizer=bpe) exports that tokenizer: the ids posbench trained on."""
    from posbench.data.load import load_corpus
    from posbench.hf.export import export

    _, spec = posbench_run(compose, tmp_path / "run", "rope", "data=local", f"data.path={small_corpus_for_export}",
                           "data/tokenizer=bpe", "data.tokenizer.vocab_size=300")
    out = export(tmp_path / "run", tmp_path / "export")
    tok = transformers.AutoTokenizer.from_pretrained(out, local_files_only=True)
    text = "alpha beta gamma 12. window"
    assert tok(text, add_special_tokens=False)["input_ids"] == load_corpus(spec.data).tokenizer.encode(text).ids
    assert json.loads((out / "config.json").read_text())["vocab_size"] == 300


@pytest.fixture(scope="module")
def small_corpus_for_export(tmp_path_factory):
    from tests.conftest import write_text_corpus

    return write_text_corpus(tmp_path_factory.mktemp("export-corpus") / "docs", n_docs=20, words_per_doc=200)
