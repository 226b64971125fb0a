"""LongRoPE (posbench/attention/longrope.py, posbench/jobs/longrope_search.py): the table of searched
factors, the refusal without them, the switch at the training length, and the factor search."""

import json
import math

import pytest
import torch

from posbench.attention.rope_scalings import ROPE_SCALINGS, plain_frequencies
from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, build_encoding
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import rows
from posbench.model.transformer import ModelConfig, build_model

TINY = ModelConfig(name="tiny", d_model=64, n_layers=2, n_heads=2)


BASE = ["model=tiny", "train=smoke", "train_len=16", "eval.protocols=[nonoverlapping]", "eval.multiples=[1,4]",
        "eval.scored_tokens=256", "data=local"]


@pytest.fixture
def table(tmp_path, monkeypatch):
    from posbench.attention import longrope

    path = tmp_path / "factors.json"
    monkeypatch.setattr(longrope, "TABLE", path)
    return path


def test_longrope_without_searched_factors_is_refused_in_one_line(table, compose, tmp_path):
    from posbench.attention.longrope import missing_reason

    reason = missing_reason(32, 10000.0, 16, 4.0)
    assert "no searched LongRoPE factors for head dimension 32, base 10000, train_len 16, factor 4" in reason
    assert "python -m posbench.jobs.longrope_search <run_dir> --factor 4 --write" in reason
    with pytest.raises(PosbenchError, match="extend.method=longrope: no searched LongRoPE factors"):
        compose(*BASE, "encoding=rope", "extend.length=64", "extend.method=longrope", f"runs_dir={tmp_path}").check()
    # at evaluation: the row has no score, with that reason (not a failed evaluation)
    enc = build_encoding("rope", ModelShape(64, 2, 2, 16))
    (row,) = [r for r in rows(enc, EvalConfig(rope_scaling=["longrope"], multiples=[1, 4])) if "longrope" in r.name]
    assert row.name == "rope+longrope@4x" and row.undefined_reason(enc, 64) == reason


def test_longrope_reads_the_table_and_switches_at_the_training_length(table):
    from posbench.attention.longrope import table_key
    from posbench.jobs.longrope_search import write_entry

    long = [1.0 + 0.1 * i for i in range(16)]
    write_entry(table_key(32, 10000.0, 16, 4.0), {"long_factor": long, "short_factor": [1.0] * 16})
    with pytest.raises(PosbenchError, match="already holds d32_base10000_L16_x4"):
        write_entry(table_key(32, 10000.0, 16, 4.0), {"long_factor": long, "short_factor": [1.0] * 16})
    compute = ROPE_SCALINGS.get("longrope").compute
    inv, scale = compute(32, 10000.0, 4.0, 16, 64)
    torch.testing.assert_close(inv, plain_frequencies(32, 10000.0) / torch.tensor(long, dtype=torch.float64))
    assert scale == pytest.approx(1 + math.log(4) / math.log(16))
    short, _ = compute(32, 10000.0, 4.0, 16, 16)
    torch.testing.assert_close(short, plain_frequencies(32, 10000.0))


def test_the_factor_search_improves_on_its_yarn_start(table):
    from posbench.attention.longrope import yarn_init
    from posbench.jobs.longrope_search import search_factors

    torch.manual_seed(0)
    model = build_model(TINY, "rope", {}, 16)
    tokens = (torch.arange(4000) * 7 % 251).numpy().astype("uint8")
    budget = {"population": 4, "iterations": 2, "mutations": 2, "crossovers": 2, "parents": 2, "windows": 2,
              "heldout_windows": 2}
    entry = search_factors(model, tokens, 16, 4.0, budget=budget)
    f = entry["long_factor"]
    assert len(f) == 16 and all(1.0 <= v <= 4.0 + 1e-9 for v in f) and f == sorted(f)
    s = entry["search"]
    assert s["best_loss"] <= min(s["init_loss"].values()) and s["evaluations"] <= 4 + 2 * 4 and s["window_tokens"] == 64
    assert len(s["init_loss"]) == 2  # the reference's start (YaRN mixed in factor space) and YaRN's own frequencies
    assert all(map(math.isfinite, s["heldout_init_loss"].values())) and math.isfinite(s["heldout_best_loss"])  # on windows not searched
    assert yarn_init(32, 10000.0, 16, 4.0)[0] == pytest.approx(1.0) and yarn_init(32, 10000.0, 16, 4.0)[-1] == 4.0
    assert not hasattr(model.encoding, "frequencies") or "frequencies" not in vars(model.encoding)


def test_the_tests_never_write_the_committed_table(table):
    from posbench.attention import longrope

    assert longrope.TABLE == table and longrope.read_table() == {}
    committed = json.loads((__import__("pathlib").Path(longrope.__file__).with_name("longrope_factors.json")).read_text())
    assert set(committed) == {"d32_base10000_L64_x4", "d32_base10000_L64_x16"}


def test_the_committed_factors_fit_the_presets():
    """rope_extension evaluates longrope at 16x, extension fine-tunes with it at 4x (small: head dimension 32)."""
    from posbench.attention.longrope import TABLE, table_key

    table = json.loads(TABLE.read_text())
    for factor in (4.0, 16.0):
        entry = table[table_key(32, 10000.0, 64, factor)]
        f = entry["long_factor"]
        assert len(f) == 16 and f == sorted(f) and 1 <= f[0] and f[-1] <= factor + 1e-9
        search = entry["search"]
        assert search["best_loss"] <= min(search["init_loss"].values())
        assert search["heldout_best_loss"] < min(search["heldout_init_loss"].values())  # better than its starts, held out
