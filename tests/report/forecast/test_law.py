"""The forecast's law (posbench/report/forecast/law.py): a power law along an axis recovered within its
interval at its nominal rate, a backtest that passes on the law and misses a point that breaks it, and
the refusals of a forecast with too few points or inside the data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from posbench.core.errors import PosbenchError
from posbench.report.analysis.bootstrap import Estimate, seeds_and_text
from posbench.report.forecast import law


def truth(x: float) -> float:
    return 0.4 - 0.15 * math.log2(x / 32)  # log S falling by 0.15 per doubling


def exact(x: float, se: float = 0.02, df: float = 2.0) -> law.Point:
    half = stats.t.ppf(0.975, df) * se
    m = truth(x)
    return law.Point((x,), Estimate(m, m - half, m + half, se, df))


def test_the_fit_recovers_an_exact_law():
    f = law.predict([exact(32), exact(64), exact(128)], (256,))
    assert f.mean == pytest.approx(truth(256), abs=1e-12)
    assert f.lo < truth(256) < f.hi and f.points == 3


def test_the_interval_covers_the_law_at_its_nominal_rate_with_three_seeds_a_point():
    """Each point: three seeds drawn around the law, their mean and the report's seed interval
    (bootstrap.seeds_and_text); the forecast at 256 from 32, 64, 128 covers the truth in about 95%."""
    rng = np.random.default_rng(7)
    hits, trials = 0, 1500
    for _ in range(trials):
        pts = [law.Point((x,), seeds_and_text(truth(x) + rng.normal(0, 0.1, 3), None, 0)) for x in (32, 64, 128)]
        f = law.predict(pts, (256,))
        hits += f.lo <= truth(256) <= f.hi
    assert 0.93 <= hits / trials <= 0.99


def test_the_backtest_passes_on_the_law_and_misses_a_point_that_breaks_it():
    fit = [exact(32), exact(64), exact(128)]
    assert law.backtest(fit, exact(256)).result == law.PASSED
    m = truth(256) + 0.5  # 1.65x the law's ratio, with a narrow interval
    broken = law.Point((256,), Estimate(m, m - 0.05, m + 0.05, 0.02, 2.0))
    assert law.backtest(fit, broken).result == law.MISSED
    no_interval = law.Point((256,), Estimate(m, math.nan, math.nan))
    assert law.backtest(fit, no_interval).result == law.NOT_TESTED


def test_a_forecast_past_the_data_needs_three_points_and_a_value_past_them():
    with pytest.raises(PosbenchError, match="at least 3 points on it; it has 2 \\(32, 64\\)"):
        law.beyond([exact(32), exact(64)], (128,), "training length")
    with pytest.raises(PosbenchError, match="not past the data: give a value above 128"):
        law.beyond([exact(32), exact(64), exact(128)], (100,), "training length")
    f = law.beyond([exact(32), exact(64), exact(128)], (512,), "training length")
    assert f.mean == pytest.approx(truth(512))


def test_the_class_comes_from_the_interval_only():
    flat = law.Forecast((512,), math.log(1.0), math.log(0.99), math.log(1.01), 0.01, 10, 3)
    straddling = law.Forecast((512,), math.log(1.05), math.log(0.98), math.log(1.2), 0.05, 10, 3)
    assert flat.verdict(0.05) == "flat" and straddling.verdict(0.05) == "undecided"


def test_a_law_in_two_axes_needs_points_off_each_axis():
    line = [law.Point((x, 1e5), exact(x).est) for x in (32, 64, 128)]  # one size only: b_N not identified
    with pytest.raises(PosbenchError, match="needs 3 points that differ on every axis"):
        law.predict(line, (256, 4e6))
    plane = line + [law.Point((64, 8e5), exact(64).est)]
    f = law.predict(plane, (256, 8e5))
    assert math.isfinite(f.mean) and math.isfinite(f.lo)


def test_axis_values_must_be_positive():
    with pytest.raises(PosbenchError, match="positive, finite axis values"):
        law.predict([exact(32), exact(64)], (0,))
