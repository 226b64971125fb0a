"""The forecast section (posbench/report/forecast/section.py) on made-up lines: a line that follows the
law gets a forecast past the data as a class with its interval; a line whose largest point breaks the
law prints "no forecast"; a forecast asked for where the runs cannot give one is refused in one line."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from scipy import stats

from posbench.core.errors import PosbenchError
from posbench.report.analysis.bootstrap import Estimate
from posbench.report.forecast import section as S
from posbench.report.forecast.law import Point
from posbench.report.forecast.lines import Line


def point(x: float, ratio: float, se: float = 0.01) -> Point:
    half = stats.t.ppf(0.975, 4) * se
    m = math.log(ratio)
    return Point((x,), Estimate(m, m - half, m + half, se, 4.0))


def law_ratio(x: float) -> float:
    return 1.5 * (x / 32) ** 0.2  # rises by 2^0.2 per doubling


def context(made: list[Line], forecasts=()) -> SimpleNamespace:
    return SimpleNamespace(options=SimpleNamespace(tolerance=0.05, forecasts=tuple(forecasts)),
                           derived=lambda key, compute: made)


FOLLOWS = Line("nonoverlapping", "rope", "train_len", "size small",
               tuple(point(x, law_ratio(x)) for x in (32, 64, 128, 256)))
BREAKS = Line("nonoverlapping", "nope", "train_len", "size small",
              tuple(point(x, law_ratio(x) * (2.0 if x == 256 else 1.0)) for x in (32, 64, 128, 256)))
SHORT = Line("nonoverlapping", "alibi", "params", "train_len 64", (point(1e5, 1.0), point(8e5, 1.0)))


def test_a_line_that_follows_the_law_is_forecast_as_a_class_with_its_interval():
    frame = S.forecast_frame(context([FOLLOWS]))
    (r,) = frame.to_dict("records")
    assert r["backtest"] == "passed" and r["forecast_at"] == 512
    assert r["forecast"] == pytest.approx(law_ratio(512), rel=1e-9)
    assert r["forecast_lo"] < law_ratio(512) < r["forecast_hi"] and r["forecast_class"] == "broken"
    shown = S.shown(frame).iloc[0]
    assert shown["forecast"].startswith("broken, 2.") and "L256: forecast" in shown["backtest (largest point held out)"]


def test_a_held_out_point_that_breaks_the_law_prints_no_forecast():
    frame = S.forecast_frame(context([BREAKS]))
    (r,) = frame.to_dict("records")
    assert r["backtest"] == "missed" and math.isnan(r["forecast"])
    assert r["forecast_class"] == "no forecast (the backtest missed)"
    assert S.shown(frame).iloc[0]["forecast"] == "no forecast (the backtest missed)"


def test_lines_of_fewer_than_three_points_are_not_backtested_or_forecast():
    assert S.forecast_frame(context([SHORT])).empty
    assert not S.testable(context([SHORT]))


def test_asked_for_values_replace_the_default_doubling():
    frame = S.forecast_frame(context([FOLLOWS], [("train_len", 1024.0), ("train_len", 2048.0)]))
    assert list(frame["forecast_at"]) == [1024.0, 2048.0]


def test_a_forecast_request_is_checked_before_anything_is_written():
    assert S.parse_requests(["train_len=512", "budget_steps=9600"]) == (("train_len", 512.0), ("budget_steps", 9600.0))
    with pytest.raises(PosbenchError, match="AXIS one of train_len, params, rope_base, budget_steps"):
        S.parse_requests(["size=2"])
    with pytest.raises(PosbenchError, match="must be a positive number, got '-3'"):
        S.parse_requests(["train_len=-3"])
    with pytest.raises(PosbenchError, match="needs a line of at least 3 points; these runs have 2 at most"):
        S.check_requests(context([SHORT], [("params", 1e7)]))
    with pytest.raises(PosbenchError, match="not past the data: give a value above 256"):
        S.check_requests(context([FOLLOWS], [("train_len", 200.0)]))
    S.check_requests(context([FOLLOWS], [("train_len", 512.0)]))  # a valid request passes


def test_axis_values_read_as_a_reader_reads_them():
    assert S.axis_value_text("params", 4.79e6) == "4.79M params"
    assert S.axis_value_text("budget_steps", 9600) == "9600 steps"
    assert S.axis_value_text("rope_base", 1e6) == "base 1e+06"
    assert S.axis_value_text("train_len", 512) == "L512" and S.axis_value_text("train_len", 512, unit=False) == "512"
