"""data.tokenizer (posbench/data/tokenizer.py): a byte-level BPE trained offline and cached, a
tokenizer.json that changed, the scored text in bytes whatever the tokenizer, bits per byte,
refusals, and the whole spine with BPE."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.data import tokenizer as tokenizers
from posbench.data.corpus import DataConfig, corpus_change
from posbench.data.load import load_corpus
from posbench.data.tokenizer import TokenizerConfig
from posbench.evaluation.scored_text import scored_stream
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.windows import stream_segments
from posbench.evaluation.resolved import ResolvedEval
from tests.conftest import cli, write_text_corpus

VOCAB = 300  # the test corpus holds about a hundred merges' worth of words and numbers


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    return write_text_corpus(tmp_path_factory.mktemp("tok-corpus") / "docs", n_docs=30, words_per_doc=600)


def data(corpus_dir: Path, cache: Path, **tokenizer) -> DataConfig:
    return DataConfig(name="local", source="local", path=str(corpus_dir), cache_dir=str(cache), val_fraction=0.2,
                      tokenizer=TokenizerConfig(**tokenizer))


def test_a_bpe_trains_offline_once_and_is_read_from_its_cache(corpus_dir, tmp_path, monkeypatch):
    corpus = load_corpus(data(corpus_dir, tmp_path, kind="bpe", vocab_size=VOCAB))
    assert corpus.train.dtype == np.uint16 and corpus.val.dtype == np.uint16
    assert int(corpus.train.max()) < VOCAB and corpus.tokenizer.get_vocab_size() == VOCAB
    record = corpus.fingerprint["tokenizer"]
    assert record["name"] == "bpe300" and record["vocab_size"] == VOCAB and len(record["sha256"]) == 16
    assert record["tokenizers"] == tokenizers.library_version()
    # the text's hash is the byte corpus's: the same text, whatever the tokenizer
    assert corpus.fingerprint["hash"] == load_corpus(data(corpus_dir, tmp_path)).fingerprint["hash"]
    assert 1.5 < corpus.fingerprint["bytes_per_token"] < 8
    # the tokens spell the training text exactly (documents encoded alone, the separator between)
    first = bytes(load_corpus(data(corpus_dir, tmp_path)).train[:2000])
    decoded = corpus.tokenizer.decode(corpus.train[:600].tolist()).encode()
    assert decoded[:1500] == first[:1500]
    (path,) = (tmp_path / "tokenizers").glob("bpe300-*/tokenizer.json")
    mtime = path.stat().st_mtime_ns

    def no_training(*a, **k):
        raise AssertionError("trained again")

    monkeypatch.setattr(tokenizers, "train_bpe", no_training)
    again = load_corpus(data(corpus_dir, tmp_path, kind="bpe", vocab_size=VOCAB))
    assert path.stat().st_mtime_ns == mtime and not again.built
    assert again.fingerprint == corpus.fingerprint and np.array_equal(again.train, corpus.train)


def test_an_edited_cached_bpe_is_refused_not_reused(corpus_dir, tmp_path):
    load_corpus(data(corpus_dir, tmp_path, kind="bpe", vocab_size=VOCAB))
    (path,) = (tmp_path / "tokenizers").glob("bpe300-*/tokenizer.json")
    path.write_text(path.read_text().replace('"unk_token":null', '"unk_token":null ', 1) + "\n")
    with pytest.raises(PosbenchError, match=r"^the cached BPE tokenizer .* was changed since it was trained \(sha256 "
                                            r"\w+, trained as \w+\); delete .* to train it again$"):
        load_corpus(data(corpus_dir, tmp_path, kind="bpe", vocab_size=VOCAB))


def test_a_users_tokenizer_json_is_identified_by_its_hash(corpus_dir, tmp_path):
    trained = load_corpus(data(corpus_dir, tmp_path / "a", kind="bpe", vocab_size=VOCAB))
    mine = tmp_path / "tokenizer.json"
    trained.tokenizer.save(str(mine))
    before = load_corpus(data(corpus_dir, tmp_path / "b", kind="file", path=str(mine)))
    assert before.fingerprint["tokenizer"]["vocab_size"] == VOCAB
    # an edit (here: a merge dropped) makes another tokenizer: another cache and a change a run is refused for
    spec = json.loads(mine.read_text())
    spec["model"]["merges"] = spec["model"]["merges"][:-1]
    mine.write_text(json.dumps(spec))
    after = load_corpus(data(corpus_dir, tmp_path / "b", kind="file", path=str(mine)))
    assert after.cache != before.cache and after.built
    assert corpus_change(before.fingerprint, after.fingerprint).startswith("tokenizer ")


def test_the_scored_bytes_are_the_same_for_bytes_and_bpe(corpus_dir, tmp_path):
    byte = load_corpus(data(corpus_dir, tmp_path))
    bpe = load_corpus(data(corpus_dir, tmp_path, kind="bpe", vocab_size=VOCAB))
    cfg = EvalConfig(multiples=[1, 2, 4], protocols=["nonoverlapping", "sliding"], segment=512, first_scored=1024)
    found = stream_segments(np.asarray(byte.val), b"\0", 1024, 512, None)
    by_bytes = [bytes(byte.val[s : s + 512]) for s in found.starts]
    tokens, segments = scored_stream(bpe, ResolvedEval(cfg, 16, "\0"))
    by_bpe = [bpe.tokenizer.decode(tokens[s : s + n].tolist()).encode() for s, n in zip(segments.starts, segments.lengths)]
    assert len(by_bytes) > 3 and by_bpe == by_bytes
    assert segments.bytes == 512 * len(by_bytes) and segments.tokens < segments.bytes


def test_bits_per_byte_divide_by_the_bytes_scored(corpus_dir, tmp_path):
    from posbench.encodings import ModelShape, build_encoding
    from posbench.evaluation.perplexity import evaluate_model
    from posbench.model.transformer import LanguageModel, ModelConfig

    bpe = load_corpus(data(corpus_dir, tmp_path, kind="bpe", vocab_size=VOCAB))
    cfg = EvalConfig(multiples=[1, 2], protocols=["nonoverlapping"], segment=512, first_scored=1024)
    tokens, segments = scored_stream(bpe, ResolvedEval(cfg, 16, "\0"))
    mc = ModelConfig(name="t", d_model=32, n_layers=1, n_heads=2, vocab_size=VOCAB)
    model = LanguageModel(mc, build_encoding("nope", ModelShape(32, 2, 1, 16, 16), {}))
    records, _ = evaluate_model(model, ResolvedEval(cfg, 16, text=tokens, segments=segments), torch.device("cpu"),
                                progress=False)
    for r in records:
        assert r["tokens_scored"] == segments.tokens and r["bytes_scored"] == segments.bytes
        assert r["bpb"] == pytest.approx(r["loss"] * r["tokens_scored"] / (math.log(2) * r["bytes_scored"]))
        assert r["length_bytes"] == pytest.approx(r["length"] * segments.bytes / segments.tokens, abs=0.1)


def test_a_hub_tokenizer_is_refused_offline_in_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(PosbenchError) as e:
        tokenizers.vocab_size(TokenizerConfig(kind="hub", name="posbench-test/no-such-tokenizer"))
    assert str(e.value) == (
        "data.tokenizer.name='posbench-test/no-such-tokenizer' is a hub tokenizer and HF_HUB_OFFLINE is set (nor is it "
        "in the Hugging Face cache); use data/tokenizer=bpe (trained offline on the corpus) or data/tokenizer=file "
        "data.tokenizer.path=<a tokenizer.json>")


def test_a_hub_tokenizer_refused_at_the_command_line_writes_nothing(entry, tmp_path, corpus_dir):
    code, err = entry("train", "data/tokenizer=hub", "data.tokenizer.name=gpt2", f"runs_dir={tmp_path / 'runs'}",
                      "data=local", f"data.path={corpus_dir}")
    assert code == 2 and err.count("\n") == 1 and "HF_HUB_OFFLINE is set" in err
    assert not (tmp_path / "runs").exists()


def test_every_tokenizer_option_composes(compose, tmp_path):
    mine = tmp_path / "t.json"
    tokenizers.train_bpe(["alpha beta gamma " * 50], 260).save(str(mine))
    assert compose("data/tokenizer=byte").model.vocab_size == 256
    assert compose("data/tokenizer=bpe").model.vocab_size == 1024
    assert compose("data/tokenizer=file", f"data.tokenizer.path={mine}").model.vocab_size == 260


def test_train_eval_report_with_bpe_end_to_end(corpus_dir, tmp_path):
    """A byte and a BPE run on one token set (segments given in bytes), evaluated again at a new
    length, and the report."""
    runs = tmp_path / "runs"
    common = ["model=tiny", "train=smoke", "train_len=16", "eval.multiples=[1,2,4]", "data=local",
              f"data.path={corpus_dir}", "data.val_fraction=0.2", "data.tokenizer.vocab_size=300", "eval.segment=512", "eval.first_scored=1024",
              f"runs_dir={runs}", "eval.protocols=[nonoverlapping,sliding]", "eval.variants=[local]"]
    cli("posbench.cli.train", "-m", "data/tokenizer=byte,bpe", *common)
    metrics = {m["corpus"].get("tokenizer", {}).get("name", "byte"): m
               for m in (json.loads(p.read_text()) for p in runs.glob("*/metrics.json"))}
    assert sorted(metrics) == ["bpe300", "byte"]
    byte, bpe = metrics["byte"], metrics["bpe300"]
    assert bpe["status"] == "completed" and "bpe300" in bpe["run_id"] and bpe["model"] == "tiny/bpe300"
    sets = {e["token_set"] for m in (byte, bpe) for e in m["evaluations"]}
    assert len(sets) == 1  # the same bytes scored: one token set for both
    bytes_scored = {e["bytes_scored"] for m in (byte, bpe) for e in m["evaluations"]}
    assert len(bytes_scored) == 1
    for e in bpe["evaluations"]:
        assert e["tokens_scored"] < e["bytes_scored"] and e["length_bytes"] > e["length"]
        assert e["bpb"] == pytest.approx(e["loss"] * e["tokens_scored"] / (math.log(2) * e["bytes_scored"]))
    run_dir = runs / bpe["run_id"]
    cli("posbench.cli.evaluate", f"run_dir={run_dir}", "eval.multiples=[1,2,4,8]", "eval.segment=512",
        "eval.first_scored=1024", "eval.protocols=[nonoverlapping]")
    again = json.loads((run_dir / "metrics.json").read_text())
    assert 128 in {e["length"] for e in again["evaluations"]}
    out = tmp_path / "report"
    cli("posbench.cli.report", str(runs), "--out", str(out))
    md = (out / "report.md").read_text()
    assert "tiny/bpe300" in md and "bits per byte" in md


@pytest.mark.parametrize("damage", ['{"sha2', "", "[1, 2]", '{"vocab_size": 300}', "\udcff"],
                         ids=["torn", "empty", "a list", "no hash", "not utf-8"])
def test_a_damaged_record_of_a_cached_bpe_trains_it_again_with_a_warning(corpus_dir, tmp_path, caplog, damage):
    """trained.json is posbench's bookkeeping, written atomically: damaged (a torn disk, a stray edit), the BPE is
    trained again from the corpus with a warning naming the file, and gives the same tokens; a traceback before."""
    import logging

    first = load_corpus(data(corpus_dir, tmp_path, kind="bpe", vocab_size=VOCAB))
    (meta,) = (tmp_path / "tokenizers").glob("bpe300-*/trained.json")
    meta.write_bytes(damage.encode("utf-8", "surrogateescape"))
    with caplog.at_level(logging.WARNING, logger="posbench"):
        again = load_corpus(data(corpus_dir, tmp_path, kind="bpe", vocab_size=VOCAB))
    assert [r.getMessage() for r in caplog.records] == [
        f"the cached BPE tokenizer's record {meta} is damaged (not the JSON posbench writes); training the tokenizer "
        f"again into {meta.parent}"]
    assert json.loads(meta.read_text())["sha256"] == again.fingerprint["tokenizer"]["sha256"]
    assert again.fingerprint == first.fingerprint and np.array_equal(again.train, first.train)


def test_a_damaged_record_of_a_token_cache_tokenizes_again_with_a_warning(corpus_dir, tmp_path, caplog):
    import logging

    first = load_corpus(data(corpus_dir, tmp_path, kind="bpe", vocab_size=VOCAB))
    record = first.cache / "fingerprint.json"
    record.write_text(record.read_text()[:20])
    with caplog.at_level(logging.WARNING, logger="posbench"):
        again = load_corpus(data(corpus_dir, tmp_path, kind="bpe", vocab_size=VOCAB))
    assert [r.getMessage() for r in caplog.records] == [
        f"the token cache's record {record} is damaged (not the JSON posbench writes); tokenizing again"]
    assert again.fingerprint == first.fingerprint and np.array_equal(again.train, first.train)
    assert json.loads(record.read_text())["bytes_per_token"] == first.fingerprint["bytes_per_token"]
