"""The report section "Forecasts past the data, with their backtest" (posbench/report/forecast/).

For every line of three or more points along a numeric axis (report/forecast/lines.py: training length,
parameters, RoPE base, training steps), the law of report/forecast/law.py is fitted without the line's
largest point and predicts it; the measured 95% interval either overlaps the forecast's (passed) or not
(missed). Past the data (by default one doubling past the largest point; ``posbench-report --forecast
AXIS=VALUE`` for chosen values) a forecast is given only where the backtest passed, and only as the
verdict class its interval decides, with that interval; a missed or untested backtest prints
"no forecast" with the reason.
"""

from __future__ import annotations

import math

import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.forecast.law import MIN_POINTS, MISSED, NOT_TESTED, PASSED, backtest, beyond
from posbench.report.forecast.lines import AXES, AXIS_WORDS, Line, lines
from posbench.report.section import SECTIONS, Output, Section

NO_FORECAST = "no forecast"


def axis_value_text(axis: str, x: float, unit: bool = True) -> str:
    """An axis' number as a reader reads it: L256, 4.79M params, 4800 steps, base 1e+06 (``unit``: with
    the axis' word; without it 256, 4.79M, 4800, 1e+06)."""
    if axis == "params":
        text = f"{x / 1e6:.2f}M" if x >= 1e4 else f"{x:.0f}"
        return f"{text} params" if unit else text
    text = f"{x:g}"
    if not unit:
        return text
    return {"budget_steps": f"{text} steps", "rope_base": f"base {text}"}.get(axis, f"L{text}")


def parse_requests(texts: list[str] | tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """``--forecast AXIS=VALUE`` flags as (axis, value), refused in one line where the axis is not one of
    AXES or the value is not a positive number."""
    out = []
    for text in texts:
        axis, sep, value = str(text).partition("=")
        axis = axis.strip()
        if not sep or axis not in AXES:
            raise PosbenchError(f"--forecast {text!r}: give AXIS=VALUE with AXIS one of {', '.join(AXES)} "
                                "(e.g. --forecast train_len=512)")
        try:
            x = float(value)
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and x > 0):
            raise PosbenchError(f"--forecast {text!r}: the value must be a positive number, got {value!r}")
        out.append((axis, x))
    return tuple(out)


def check_requests(ctx) -> None:
    """Before anything is written: each asked-for forecast has a line of MIN_POINTS points along its axis
    and lies past every such line's data; else one line naming the value and what would be valid."""
    for axis, x in ctx.options.forecasts:
        along = [ln for ln in lines(ctx) if ln.axis == axis]
        usable = [ln for ln in along if len(ln.points) >= MIN_POINTS]
        if not usable:
            most = max((len(ln.points) for ln in along), default=0)
            raise PosbenchError(f"--forecast {axis}={x:g}: a forecast along the {AXIS_WORDS[axis]} needs a line of at "
                                f"least {MIN_POINTS} points; these runs have {most} at most on any line")
        largest = max(ln.points[-1].at[0] for ln in usable)
        if x <= largest:
            raise PosbenchError(f"--forecast {axis}={x:g} is not past the data: give a value above {largest:g}, "
                                f"the largest {AXIS_WORDS[axis]} of these runs' lines")


def _targets(ctx, ln: Line) -> list[float]:
    asked = [x for a, x in ctx.options.forecasts if a == ln.axis]
    return asked or [2.0 * ln.points[-1].at[0]]  # by default one doubling past the largest point


def forecast_frame(ctx) -> pd.DataFrame:
    """One row per line and forecast target: the backtest on the line's largest point and the forecast
    past the data (the module doc)."""
    rows = []
    tolerance = ctx.options.tolerance
    for ln in testable(ctx):
        xs = [p.at[0] for p in ln.points]
        bt = backtest(list(ln.points[:-1]), ln.points[-1])
        f, m = bt.forecast, bt.held.est
        base = {"protocol": ln.protocol, "variant": ln.variant, "axis": ln.axis, "along": ln.along,
                "points": " ".join(f"{x:g}" for x in xs), "held_out": xs[-1],
                "backtest_forecast": _exp(f.mean), "backtest_forecast_lo": _exp(f.lo), "backtest_forecast_hi": _exp(f.hi),
                "measured": _exp(m.mean), "measured_lo": _exp(m.lo), "measured_hi": _exp(m.hi), "backtest": bt.result}
        for target in _targets(ctx, ln):
            row = dict(base, forecast_at=target)
            if bt.result == PASSED:
                past = beyond(list(ln.points), (target,), AXIS_WORDS[ln.axis])
                mean, lo, hi = past.ratio()
                row.update({"forecast": mean, "forecast_lo": lo, "forecast_hi": hi, "forecast_class": past.verdict(tolerance)})
            else:
                why = "the backtest missed" if bt.result == MISSED else "the backtest has no interval"
                row.update({"forecast": math.nan, "forecast_lo": math.nan, "forecast_hi": math.nan,
                            "forecast_class": f"{NO_FORECAST} ({why})"})
            rows.append(row)
    return pd.DataFrame(rows)


def _exp(v: float) -> float:
    return math.exp(v) if math.isfinite(v) else math.nan


def testable(ctx) -> list[Line]:
    """The lines with a point to hold out and enough left to fit (MIN_POINTS or more)."""
    return [ln for ln in lines(ctx) if len(ln.points) >= MIN_POINTS]


def _interval(mean, lo, hi) -> str:
    if pd.isna(mean):
        return "-"
    return f"{mean:.2f} [{lo:.2f}, {hi:.2f}]" if pd.notna(lo) and pd.notna(hi) else f"{mean:.2f}"


def shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The section's table: one line per row, axis and target, in words."""
    out = []
    for _, r in frame.iterrows():
        test = (f"{axis_value_text(r['axis'], r['held_out'])}: forecast "
                f"{_interval(r['backtest_forecast'], r['backtest_forecast_lo'], r['backtest_forecast_hi'])} vs "
                f"measured {_interval(r['measured'], r['measured_lo'], r['measured_hi'])}: {r['backtest']}")
        past = r["forecast_class"] if pd.isna(r["forecast"]) else \
            f"{r['forecast_class']}, {_interval(r['forecast'], r['forecast_lo'], r['forecast_hi'])}"
        out.append({"row": r["variant"], "axis": AXIS_WORDS[r["axis"]], "along": r["along"],
                    "points": ", ".join(axis_value_text(r["axis"], float(x), unit=False) for x in str(r["points"]).split()),
                    "backtest (largest point held out)": test,
                    "forecast at": axis_value_text(r["axis"], r["forecast_at"]), "forecast": past})
    return pd.DataFrame(out)


@SECTIONS.register("forecast")
class Forecasts(Section):
    order = 45  # after the map (43) and the RoPE base's theories (44), whose points it extends
    files = (Output("forecast.csv", "per row, axis and target: the law fitted without the line's largest point, "
                                    "its forecast of that point beside the measured interval (backtest), and the "
                                    "forecast past the data where the backtest passed"),)

    def applies(self, ctx) -> bool:
        return bool(ctx.has_lm and ctx.ratio_column is not None and testable(ctx))

    def build(self, ctx, out) -> list:
        frame = forecast_frame(ctx)
        out.csv("forecast.csv", frame)
        tested = frame.drop_duplicates(["protocol", "variant", "axis", "along"])
        tested = tested[tested["backtest"] != NOT_TESTED]
        counts = tested["backtest"].value_counts().to_dict()
        said = ", ".join(f"{counts.get(w, 0)} {w}" for w in (PASSED, MISSED))
        return [Heading("Forecasts past the data, with their backtest"),
                Para("Along each line of three or more points (training length, parameters, RoPE base or training "
                     "steps, the other settings fixed), the verdict statistic (on equal context where the row has its "
                     "window control) is fitted as a power law in the axis, log S = a + b log2 x, by least squares "
                     "over the points' estimates; the forecast's 95% interval carries the points' own intervals over "
                     "seeds and text, not the law's misfit (posbench/report/forecast/law.py). **Backtest:** the law "
                     "is fitted without the line's largest point and predicts it; it *missed* where the measured 95% "
                     "interval excludes the forecast's, else it *passed* (not shown wrong: overlap is lenient). Past "
                     "the data a forecast is given only where its backtest passed, and only as the class its interval "
                     "decides; elsewhere \"no forecast\"."),
                Para(f"Backtests: {said} of {len(tested)} line{'' if len(tested) == 1 else 's'}."),
                Table(shown(frame).reset_index(drop=True))]
