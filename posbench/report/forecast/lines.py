"""The points a forecast is fitted to: each encoding's lines along a numeric axis, with the verdict
statistic's estimate at every point (log scale, over seeds and text: report/analysis/bootstrap.py).

* training length, parameters and RoPE base: the map's lines (report/analysis/points.py: the main-table rows
  that agree on every other coordinate), each point at its row's largest budget;
* training steps: each main-table row's budgets (report/analysis/sweep.py: cool-down branches of one
  trunk, or separate runs), the other coordinates fixed by the row itself.

A line is one (protocol, row, fixed coordinates) and its points in the axis' order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from posbench.report.analysis import sweep
from posbench.report.forecast.law import Point
from posbench.report.analysis import points as P

# the axes a forecast runs along, by their name on the command line (--forecast AXIS=VALUE), and the
# number each point has on it
AXES = {"train_len": P.TRAIN_LEN, "params": P.SIZE, "rope_base": P.ROPE_BASE, "budget_steps": sweep.BUDGET}
AXIS_WORDS = {"train_len": "training length", "params": "parameters", "rope_base": "RoPE base",
              "budget_steps": "training steps"}


@dataclass(frozen=True)
class Line:
    """One encoding's points along one axis, the other settings fixed (``along``: them, in words)."""

    protocol: str
    variant: str
    axis: str  # a key of AXES
    along: str
    points: tuple[Point, ...]  # ordered by the axis' number


def _estimate(parts) -> object | None:
    if parts is None:
        return None
    est = parts.estimate()
    return est if np.isfinite(est.mean) else None


def map_lines(ctx) -> list[Line]:
    """Every line of two or more points along training length, parameters or RoPE base."""
    pts = P.points(ctx.table, P.with_params(ctx.completed, ctx.configs), ctx.ratio_column)
    if pts.empty:
        return []
    parts = sweep.parts_of(ctx)[0]
    by_cell = {k[:4]: v for k, v in parts.items()}  # budgets in ascending order: the last is the largest
    out = []
    for name, coord in AXES.items():
        if coord == sweep.BUDGET or coord not in pts:
            continue
        keys = P.line_keys(coord)
        for key, line in pts.groupby(keys, dropna=False):
            if line[coord].nunique() < 2:
                continue
            found = []
            for _, p in line.iterrows():
                cell = by_cell.get((p["protocol"], p["variant"], p["model"], p["train_len"]))
                est = _estimate(cell[1] if cell else None)
                x = float(p["params"]) if coord == P.SIZE else P.axis_value(line, coord, p[coord])
                if est is not None and np.isfinite(x) and x > 0:
                    found.append(Point((x,), est))
            if len({q.at for q in found}) >= 2:
                held = ", ".join(f"{k} {v}" for k, v in zip(keys, key) if k not in ("protocol", "variant")
                                 and v not in (P.DEFAULT_CORPUS, P.PLAIN, P.NO_BASE))
                out.append(Line(key[0], key[1], name, held, tuple(sorted(found, key=lambda q: q.at))))
    return out


def budget_lines(ctx) -> list[Line]:
    """Every unwindowed row's line along its training steps (two or more budgets)."""
    if not ctx.has_budgets:
        return []
    parts = sweep.budget_parts_of(ctx)
    windowed = set(ctx.table.loc[ctx.table["windowed"].astype(bool), "variant"]) if "windowed" in ctx.table else set()
    cells: dict[tuple, list[Point]] = {}
    for (protocol, variant, model, train_len, steps), (_, p) in parts.items():
        est = _estimate(p)
        if variant in windowed or est is None:
            continue
        cells.setdefault((protocol, variant, model, int(train_len)), []).append(Point((float(steps),), est))
    return [Line(protocol, variant, "budget_steps", f"model {model}, train_len {train_len}",
                 tuple(sorted(found, key=lambda q: q.at)))
            for (protocol, variant, model, train_len), found in sorted(cells.items()) if len(found) >= 2]


def lines(ctx) -> list[Line]:
    """Every line a forecast can be fitted to, computed once per report."""
    return ctx.derived("forecast_lines", lambda: map_lines(ctx) + budget_lines(ctx))


def axis_points(found: list[Line], axis: str) -> pd.DataFrame:
    """How many points each line along ``axis`` has (for the refusal of a forecast asked along it)."""
    return pd.DataFrame([{"variant": ln.variant, "along": ln.along, "points": len(ln.points)}
                         for ln in found if ln.axis == axis])
