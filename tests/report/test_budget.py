"""posbench/report/budget.py: verdicts and their interval classes, the last doubling, and the
warnings that keep a ratio from being read without its training budget."""

import math

import pandas as pd
import pytest

from posbench.report.budget import last_doubling, spread_warnings, stability, verdict


def test_last_doubling_known_values():
    h = pd.DataFrame({"step": [100, 150, 200, 300], "val_loss": [3.0, 2.5, 2.4, 2.0]})
    d = last_doubling(h)
    assert (d["from_step"], d["to_step"], d["estimated"]) == (150, 300, False)
    assert d["change"] == pytest.approx(0.2)  # (2.5 - 2.0) / 2.5
    # no point at half the budget: the latest before it, scaled to one doubling (log2(300/100))
    d = last_doubling(h[h["step"] != 150])
    assert (d["from_step"], d["estimated"]) == (100, True)
    assert d["change"] == pytest.approx((3.0 - 2.0) / 3.0 / math.log2(3))
    # none before half: the earliest point (200 -> 300 is 0.585 of a doubling)
    d = last_doubling(h[h["step"] >= 200])
    assert d["change"] == pytest.approx((2.4 - 2.0) / 2.4 / math.log2(1.5))
    assert math.isnan(last_doubling(h.iloc[-1:])["change"])
    assert math.isnan(last_doubling(pd.DataFrame({"step": [1], "loss": [2.0]}))["change"])


def test_verdict_classes():
    assert [verdict(r, 0.05) for r in (0.9, 1.05, 1.06, 1.3, 1.31, float("nan"))] == \
        ["flat", "flat", "mild", "mild", "broken", "n/a"]


def test_spread_warning_names_the_extremes_and_ignores_variants():
    table = pd.DataFrame({"protocol": "nonoverlapping", "model": "small", "train_len": 64,
                          "variant": ["rope", "nope", "alibi", "rope+yarn@16x"], "1x": [7.0, 10.0, 7.2, 50.0]})
    (w,) = spread_warnings(table, {"rope", "nope", "alibi"}, 0.10)
    assert "7.00 (`rope`)" in w and "10.00 (`nope`)" in w and "43% apart" in w
    assert spread_warnings(table, {"rope", "alibi"}, 0.10) == []  # 3% apart


def test_stability_detects_a_verdict_that_flips():
    curves = pd.DataFrame({
        "model": "tiny", "train_len": 64, "multiple": 16.0, "train_tokens": 0, "ppl_1x": 5.0, "seeds": 2,
        "encoding": ["nope", "nope", "alibi", "alibi"], "step": [500, 1000, 500, 1000], "ratio": [1.3, 5.6, 0.99, 0.98]})
    wide, (note,) = stability(curves, 0.05)
    assert "verdicts changed for `nope`" in note and "order of the ratios held" in note
    assert wide.set_index("encoding").loc["nope", "step 1000"] == "5.60 broken"


def test_interval_verdict_classes():
    from posbench.report.budget import interval_verdict

    assert interval_verdict(0.97, 1.04, 1.0, 0.05) == "flat"
    assert interval_verdict(1.06, 1.29, 1.1, 0.05) == "mild"
    assert interval_verdict(1.31, 2.0, 1.5, 0.05) == "broken"
    assert interval_verdict(1.01, 1.07, 1.04, 0.05) == "undecided"
    assert interval_verdict(1.25, 1.35, 1.3, 0.05) == "undecided"
    assert interval_verdict(float("nan"), float("nan"), 1.02, 0.05) == "flat, no interval"
