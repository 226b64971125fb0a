"""A point measured elsewhere forecast from two axes at once (posbench/report/forecast/external.py): the
law in train_len and params recovers a point off both lines, a measurement far from it is missed, and a
row without points off both axes says why it is not tested."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from posbench.report.analysis.bootstrap import Estimate
from posbench.report.forecast import external
from posbench.report.forecast.law import Point


def law(train_len: float, params: float) -> float:
    return 0.3 + 0.1 * math.log2(train_len / 64) + 0.2 * math.log2(params / 1e6)


def point(train_len: float, params: float) -> Point:
    m = law(train_len, params)
    return Point((train_len, params), Estimate(m, m - 0.02, m + 0.02, 0.008, 4.0))


PLANE = [point(L, 8e5) for L in (32, 64, 128, 256)] + [point(64, 1e5), point(64, 4.8e6)]


def test_a_point_off_both_lines_is_forecast_and_backtested(monkeypatch):
    monkeypatch.setattr(external, "plane_points",
                        lambda ctx, variant, protocol: PLANE if variant != "lone" else PLANE[:4])
    truth = math.exp(law(256, 4.8e6))
    measured = pd.DataFrame([
        {"variant": "rope", "stat": truth, "stat_lo": truth * 0.97, "stat_hi": truth * 1.03, "seeds": 3},
        {"variant": "nope", "stat": 2 * truth, "stat_lo": 1.9 * truth, "stat_hi": 2.1 * truth, "seeds": 3},
        {"variant": "lone", "stat": truth, "stat_lo": truth * 0.97, "stat_hi": truth * 1.03, "seeds": 3}])
    frame = external.forecast_of(None, measured, (256, 4.8e6)).set_index("variant")
    assert frame.loc["rope", "forecast"] == pytest.approx(truth, rel=1e-9)
    assert frame.loc["rope", "backtest"] == "passed" and frame.loc["nope", "backtest"] == "missed"
    assert frame.loc["lone", "backtest"].startswith("not tested (a law in 2 axis value(s) needs 3 points that differ")
    assert frame.loc["rope", "fit_points"].split() == ["L32/0.80M", "L64/0.80M", "L128/0.80M", "L256/0.80M", "L64/0.10M", "L64/4.80M"]
