"""The tokenizers section (posbench/report/sections/tokenizers.py): runs of several tokenizers compared in
bits per byte, the one measure that compares across them, and whether each verdict carries over from
bytes to the subword tokenizer."""

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from posbench.report.pipeline import DEFAULT_TOLERANCE
from posbench.report.analysis.tokenizers import carries_over, comparison_table, tokenizer_of
from posbench.report.sections.tokenizers import Tokenizers
from posbench.report.analysis.tables import main_table
from tests.helpers import run_section

BYTES_PER_TOKEN = 3.5


@pytest.fixture(scope="module")
def two_tokenizers(sweep_context):
    """The shared sweep's records as byte runs, and the same losses as runs of a made-up subword tokenizer
    whose tokens carry 3.5 bytes each (so its bits per byte are the byte runs' / 3.5, its verdicts theirs)."""
    e = sweep_context.evals
    byte = e.assign(bytes_scored=e["tokens_scored"], length_bytes=e["length"].astype(float), bpb=e["loss"] / math.log(2))
    bpe = byte.assign(model=byte["model"] + "/bpe300", bytes_scored=byte["tokens_scored"] * BYTES_PER_TOKEN,
                      length_bytes=byte["length"] * BYTES_PER_TOKEN, bpb=byte["bpb"] / BYTES_PER_TOKEN)
    evals = pd.concat([byte, bpe], ignore_index=True)
    return SimpleNamespace(has_lm=True, evals=evals, table=main_table(evals, DEFAULT_TOLERANCE), budget_evals=evals,
                           token_sets=None, options=SimpleNamespace(tolerance=DEFAULT_TOLERANCE))


def test_a_verdict_carries_over_only_where_both_intervals_decide_it():
    assert carries_over("flat", "flat") == "yes" and carries_over("mild", "broken") == "no"
    assert carries_over("flat", "undecided") == "undecided" and carries_over("mild, no interval", "mild") == "undecided"


def test_models_named_model_slash_tokenizer_are_compared_in_bits_per_byte(sweep_context, two_tokenizers, tmp_path):
    assert (tokenizer_of("small/bpe1024"), tokenizer_of("small")) == ("bpe1024", "byte")
    assert not Tokenizers().applies(sweep_context)  # bytes only
    assert Tokenizers().applies(two_tokenizers)
    md, written = run_section(Tokenizers, two_tokenizers, tmp_path)
    assert md.startswith("## Tokenizers (bits per byte)") and written == {}
    assert "| bpe300 " in md and "| byte " in md and "16 tokens ~ 56 bytes" in md
    assert "verdict carries over" in md
    assert "Steps or tokenizer?" not in md  # one budget per arm: no partner to split the contrast with


def test_bits_per_byte_intervals_are_the_log_perplexity_intervals_rescaled(two_tokenizers):
    compared = comparison_table(two_tokenizers.table, two_tokenizers.evals)
    e = two_tokenizers.evals
    unwindowed = e[~e["windowed"].fillna(False).astype(bool) & (e["multiple"] == 1.0) & ~e["model"].str.contains("/")]
    assert len(compared) == unwindowed.groupby(["protocol", "variant", "model", "train_len"]).ngroups > 0
    for _, row in compared.iterrows():
        byte = [float(x) for x in row["byte: bits/byte 1x"].replace("[", "").replace("]", "").replace(",", "").split()]
        bpe = [float(x) for x in row["bpe300: bits/byte 1x"].replace("[", "").replace("]", "").replace(",", "").split()]
        mine = unwindowed[(unwindowed["protocol"] == row["protocol"]) & (unwindowed["variant"] == row["encoding"])
                          & (unwindowed["model"] == row["model"])]
        assert byte[0] == pytest.approx(mine["bpb"].mean(), abs=1e-3)  # the mean over seeds of each run's bits per byte
        assert byte[1] < byte[0] < byte[2]
        assert bpe == pytest.approx([b / BYTES_PER_TOKEN for b in byte], abs=2e-3)
        assert row["verdict carries over"] in ("yes", "undecided")  # the same losses: never "no"


def test_a_subword_run_s_token_sets_are_its_own_not_the_byte_runs():
    """One sweep's byte and BPE runs score the same bytes under one token-set name, but their documents
    hold other numbers of tokens (the report's weights): loading keeps them apart."""
    from posbench.report.records.load import tokenizer_names

    name = "545c92da6d319b4f:segments[4096, 1 per doc, from 4096]"
    bpe = {"model": "small/bpe1024", "token_sets": {name: {"doc_tokens": [1500, 1700], "tokens": 3200, "bytes": 8192}}}
    assert tokenizer_names(bpe) == {name: f"bpe1024:{name}"}
    assert tokenizer_names({"model": "small", "token_sets": {name: {}}}) == {}
    assert tokenizer_names({"model": "small/bpe1024", "token_sets": {f"bpe1024:{name}": {}}}) == {f"bpe1024:{name}": f"bpe1024:{name}"}


def test_loading_byte_and_bpe_runs_of_one_corpus_keeps_both_token_sets(sweep, tmp_path):
    """The shared sweep's runs, one of them relabelled as a BPE run with other document sizes: both
    entries survive loading, and the BPE run's records name its own."""
    import json
    import shutil

    from posbench.report.records.load import load_runs

    runs = sorted(p.parent for p in sweep[0].rglob("metrics.json"))
    for d in runs[:2]:
        shutil.copytree(d, tmp_path / d.name)
    m_path = tmp_path / runs[1].name / "metrics.json"
    m = json.loads(m_path.read_text())
    m["model"] += "/bpe300"
    for v in m["token_sets"].values():
        v["doc_tokens"] = [t // 3 for t in v["doc_tokens"]]
    m_path.write_text(json.dumps(m))
    loaded = load_runs(tmp_path)
    byte_sets = {n for n in loaded.token_sets if not n.startswith("bpe300:")}
    assert byte_sets and {f"bpe300:{n}" for n in byte_sets} <= set(loaded.token_sets)
    for n in byte_sets:
        assert loaded.token_sets[f"bpe300:{n}"]["doc_tokens"] != loaded.token_sets[n]["doc_tokens"]
    bpe_records = loaded.evals[loaded.evals["model"].str.contains("/")]
    assert not bpe_records.empty and bpe_records["token_set"].str.startswith("bpe300:").all()


def test_each_subword_row_stands_beside_its_equal_steps_and_equal_bytes_byte_partners():
    """Bytes at 1000 steps (equal bytes) read 2x/1x 1.8, bytes at 386 steps (equal steps) 1.3, BPE at 386
    steps 1.16: the contrast BPE / bytes-at-equal-bytes (0.644) splits into a steps part (1.3 / 1.8) and a
    tokenizer part (1.16 / 1.3), and steps carry log(1.3/1.8) / log(1.16/1.8) = 74% of the log-gap
    (NoPE's case: most of "does not carry over" was step count)."""
    from posbench.report.analysis.tokenizers import partners_table
    from tests.helpers import records

    byte = records({("nope", 1000): (5.0, 9.0), ("nope", 386): (6.0, 7.8)})
    bpe = records({("nope", 386): (8.0, 9.28)}).assign(model="m/bpe", run_id=lambda d: d["run_id"] + "_bpe")
    table = partners_table(pd.concat([byte, bpe], ignore_index=True), None, 0.05)
    assert len(table) == 1
    row = table.iloc[0]
    assert row["bytes, equal bytes (1000 steps)"].startswith("1.80") and row["bytes, equal steps (386 steps)"].startswith("1.30")
    assert row["bpe (386 steps)"].startswith("1.16")
    assert row["steps part"].startswith("0.72") and row["tokenizer part"].startswith("0.89")
    assert row["steps' share of the log-gap"] == "74%"
    # without the byte arm at the subword arm's steps there is no split to make
    assert partners_table(pd.concat([byte[byte["budget_steps"] == 1000], bpe], ignore_index=True), None, 0.05).empty
