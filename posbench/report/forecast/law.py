"""The law a forecast extends, its interval, and the backtest that decides whether it may be used.

**Model form.** Along one axis (training length, parameters, training steps, RoPE base) the verdict's
statistic S (on equal context where the row has its window control, else its M/1x ratio) follows a
power law in the axis' number x:

    log S = a + b log2 x

and, across two axes at once (the GPU point, where size and training length move together), the
additive form ``log S = a + b_1 log2 x_1 + b_2 log2 x_2``. The coefficients are fitted by ordinary
least squares to the points' estimates of log S (each point: one configuration's seeds, at its
largest budget, with the report's interval over seeds and text: report/analysis/bootstrap.py).

**Interval.** An OLS prediction is a fixed linear combination of the points' estimates,
``f = sum_i w_i y_i`` with ``w = phi(x_0)^T (X^T X)^-1 X^T``. The points were trained apart (their own
seeds, their own text), so ``Var f = sum_i w_i^2 se_i^2``, each se_i the report's standard error of
that point (seeds and text), with Welch-Satterthwaite degrees of freedom
``(sum w_i^2 se_i^2)^2 / sum (w_i^2 se_i^2)^2 / df_i`` and Student's t. This is the interval the
forecast has *if the law holds*: it carries the points' noise, not the law's misfit (with three points
and two coefficients there is one residual degree of freedom, too few to estimate a misfit). Whether
the law holds is what the backtest decides.

**Backtest.** Fit without the largest point of a line, predict it, and compare with its measured 95%
interval. The forecast *missed* where the measured interval excludes the forecast's (the two 95%
intervals do not overlap); else it *passed*. Overlap is a lenient criterion (a test of the difference
at 5% rejects some overlapping pairs), so a pass means "not shown wrong", and the forecast past the data
is given only as the verdict class its own interval decides, with that interval ("undecided" where it
straddles a border; report/analysis/verdicts.py interval_verdict).

No published work fits extrapolation quality against these axes (the issue's survey); the form is the
simplest one consistent with the map's per-doubling changes (report/analysis/points.py reads each change per
doubling of the axis), stated here so that a reader can reject it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from posbench.core.errors import PosbenchError
from posbench.report.analysis.bootstrap import Estimate
from posbench.report.analysis.stats import ALPHA
from posbench.report.analysis.verdicts import interval_verdict

PASSED, MISSED, NOT_TESTED = "passed", "missed", "not tested"
MIN_POINTS = 3  # a forecast past the data: a law fitted to fewer points has nothing left to be checked on


@dataclass(frozen=True)
class Point:
    """One configuration on the axes: its numbers on them (each > 0) and its statistic's estimate (log scale)."""

    at: tuple[float, ...]
    est: Estimate


@dataclass(frozen=True)
class Forecast:
    """The law's prediction of log S at ``at`` with its 95% interval, standard error and degrees of freedom."""

    at: tuple[float, ...]
    mean: float
    lo: float
    hi: float
    se: float
    df: float
    points: int

    def ratio(self) -> tuple[float, float, float]:
        """The statistic itself (exp of the log scale): mean, lo, hi."""
        return math.exp(self.mean), math.exp(self.lo), math.exp(self.hi)

    def verdict(self, tolerance: float) -> str:
        """The class the forecast's interval decides (flat / mild / broken / undecided)."""
        mean, lo, hi = self.ratio()
        return interval_verdict(lo, hi, mean, tolerance)


def _features(at: tuple[float, ...]) -> np.ndarray:
    if any(not (x > 0 and math.isfinite(x)) for x in at):
        raise PosbenchError(f"a forecast needs positive, finite axis values; got {', '.join(f'{x:g}' for x in at)}")
    return np.array([1.0, *(math.log2(x) for x in at)])


def predict(points: list[Point], at: tuple[float, ...]) -> Forecast:
    """The OLS prediction of log S at ``at`` from ``points`` (module doc), with its interval."""
    if not points:
        raise PosbenchError("a forecast needs points to fit; there are none")
    X = np.stack([_features(p.at) for p in points])
    if len(points) < X.shape[1] or np.linalg.matrix_rank(X) < X.shape[1]:
        values = ", ".join("(" + ", ".join(f"{x:g}" for x in p.at) + ")" for p in points)
        raise PosbenchError(f"a law in {X.shape[1] - 1} axis value(s) needs {X.shape[1]} points that differ on every "
                            f"axis; got {values}")
    w = _features(at) @ np.linalg.pinv(X)  # the prediction's weight on each point's estimate
    y = np.array([p.est.mean for p in points])
    se = np.array([p.est.se for p in points])
    df = np.array([p.est.df for p in points])
    mean = float(w @ y)
    terms = (w * se) ** 2
    var = float(terms.sum())
    if not np.isfinite(var):
        return Forecast(tuple(at), mean, math.nan, math.nan, math.nan, math.nan, len(points))
    if var <= 0:
        return Forecast(tuple(at), mean, mean, mean, 0.0, math.inf, len(points))
    finite = np.isfinite(df) & (df > 0)
    parts = float((terms[finite] ** 2 / df[finite]).sum())
    dof = var ** 2 / parts if parts > 0 else math.inf
    half = float(stats.t.ppf(1 - ALPHA / 2, dof)) * math.sqrt(var)
    return Forecast(tuple(at), mean, mean - half, mean + half, math.sqrt(var), dof, len(points))


@dataclass(frozen=True)
class Backtest:
    """A law fitted without ``held`` and its prediction of it: ``result`` PASSED (the 95% intervals
    overlap), MISSED (they do not) or NOT_TESTED (no interval on one side)."""

    held: Point
    forecast: Forecast
    result: str


def backtest(points: list[Point], held: Point) -> Backtest:
    """Predict ``held`` from ``points`` (which must not contain it) and compare (module doc)."""
    f = predict(points, held.at)
    m = held.est
    if not all(np.isfinite(v) for v in (f.lo, f.hi, m.lo, m.hi)):
        return Backtest(held, f, NOT_TESTED)
    return Backtest(held, f, PASSED if f.lo <= m.hi and m.lo <= f.hi else MISSED)


def beyond(points: list[Point], at: tuple[float, ...], axis: str) -> Forecast:
    """A forecast past the data at ``at``: refused in one line where the axis has fewer than MIN_POINTS
    points or ``at`` lies inside them (an interpolation is no forecast)."""
    values = sorted({p.at for p in points})
    if len(values) < MIN_POINTS:
        shown = ", ".join("/".join(f"{x:g}" for x in v) for v in values) or "none"
        raise PosbenchError(f"a forecast along {axis} needs at least {MIN_POINTS} points on it; it has "
                            f"{len(values)} ({shown})")
    largest = max(values)
    if at <= largest:
        raise PosbenchError(f"a forecast along {axis} at {'/'.join(f'{x:g}' for x in at)} is not past the data: "
                            f"give a value above {'/'.join(f'{x:g}' for x in largest)}")
    return predict(points, at)
