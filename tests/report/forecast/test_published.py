"""The published runs the forecasts are set beside (posbench/report/forecast/published.csv) and the words of
scripts/forecast_published.py: every row names its source and has either a ratio or a claim, ratios agree
with the perplexity tables' arithmetic where checkable, and the class comparison says only what it can."""

from __future__ import annotations

import pytest

from tests.helpers import load_script


@pytest.fixture(scope="module")
def script():
    return load_script("forecast_published")


def test_every_published_row_has_a_source_and_a_number_or_a_claim(script):
    pub = script.published()
    assert len(pub) > 0 and pub["source"].notna().all() and pub["paper"].str.contains("arXiv").all()
    has_ratio, has_claim = pub["ratio"].notna(), pub["claim"].fillna("") != ""
    assert (has_ratio ^ has_claim).all()  # a number read in a table, or the paper's claim: never both, never neither
    assert (pub.loc[has_ratio, "multiple"] > 1).all() and (pub.loc[has_ratio, "ratio"] > 0).all()
    # ALiBi's 1.3B model at L=512 (Press et al. 2022, Table 12): 9.79 at 512, 9.30 at 1024
    row = pub[(pub["method"] == "alibi") & (pub["params"] == 1.3e9) & (pub["train_len"] == 512) & (pub["multiple"] == 2)]
    assert row["ratio"].iloc[0] == pytest.approx(9.30 / 9.79, abs=1e-3)


def test_a_class_is_compared_only_where_both_sides_have_one(script):
    assert script.agreement("flat", "flat, 0.98 [0.97, 1.00]") == "same class"
    assert script.agreement("broken", "flat, 0.98 [0.97, 1.00]") == "differs"
    assert script.agreement("flat", "undecided, 9.24 [0.78, 109.45]") == "cannot be told"
    assert script.agreement("", "flat, 1.00 [0.99, 1.01]") == "cannot be told"  # a claim, no number
    assert script.agreement("broken", "no forecast (the backtest missed)") == "-"
    assert script.agreement("broken", "no posbench line") == "-"
