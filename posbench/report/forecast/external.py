"""A forecast of a point measured elsewhere (another report, another machine), from a report's lines along
training length and parameters at once: the law of law.py in two axes,

    log S = a + b_L log2 train_len + b_N log2 params,

fitted to every point of the report's plain lines on one corpus and tokenizer (for the CPU map: small at
train_len 32-256 and tiny, small, base at 64), and compared with the other report's measured interval
as a backtest is (the 95% intervals overlap: passed; else missed). What else differs between the two
(device, tokens per step, budget, learning rates) is the caller's to say: the law knows only these two axes.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.report.analysis import sweep
from posbench.report.forecast.law import MISSED, NOT_TESTED, PASSED, Point, predict
from posbench.report.analysis import points as P


def plane_points(ctx, variant: str, protocol: str, corpus: str | None = None) -> list[Point]:
    """``variant``'s points with their (train_len, params) from the report's map points (one corpus and
    tokenizer: ``corpus``, default the runs' first; bytes; no RoPE base; plain attention)."""
    pts = P.points(ctx.table, P.with_params(ctx.completed, ctx.configs), ctx.ratio_column)
    if pts.empty:
        return []
    corpora = sorted(set(pts[P.CORPUS]), key=lambda c: (c != "stdlib", c))
    pts = pts[(pts["variant"] == variant) & (pts["protocol"] == protocol) & (pts[P.CORPUS] == (corpus or corpora[0]))
              & (pts[P.TOKENIZER] == "byte") & (pts[P.ROPE_BASE] == P.NO_BASE) & (pts[P.PATTERN] == P.PLAIN)]
    by_cell = {k[:4]: v for k, v in sweep.parts_of(ctx)[0].items()}
    out = []
    for _, p in pts.iterrows():
        cell = by_cell.get((p["protocol"], p["variant"], p["model"], p["train_len"]))
        est = cell[1].estimate() if cell else None
        if est is not None and np.isfinite(est.mean) and np.isfinite(p["params"]):
            out.append(Point((float(p["train_len"]), float(p["params"])), est))
    return out


def forecast_of(ctx, measured: pd.DataFrame, at: tuple[float, float], protocol: str = "nonoverlapping") -> pd.DataFrame:
    """Per row of ``measured`` (columns ``variant``, ``stat``, ``stat_lo``, ``stat_hi``, ``seeds``: the other
    report's verdict statistic), the two-axis law's forecast at ``at`` (train_len, params) and the backtest word."""
    rows = []
    for _, m in measured.iterrows():
        found = plane_points(ctx, m["variant"], protocol)
        row = {"variant": m["variant"], "fit_points": " ".join(f"L{int(p.at[0])}/{p.at[1] / 1e6:.2f}M" for p in found),
               "measured": m["stat"], "measured_lo": m["stat_lo"], "measured_hi": m["stat_hi"], "seeds": m.get("seeds")}
        try:
            f = predict(found, at)
        except PosbenchError as e:  # too few points, or none off one axis: the word says why
            rows.append(dict(row, forecast=math.nan, forecast_lo=math.nan, forecast_hi=math.nan,
                             backtest=f"{NOT_TESTED} ({e})"))
            continue
        mean, lo, hi = f.ratio()
        known = all(np.isfinite(v) for v in (lo, hi, m["stat_lo"], m["stat_hi"]))
        word = NOT_TESTED if not known else PASSED if lo <= m["stat_hi"] and m["stat_lo"] <= hi else MISSED
        rows.append(dict(row, forecast=mean, forecast_lo=lo, forecast_hi=hi, backtest=word))
    return pd.DataFrame(rows)
