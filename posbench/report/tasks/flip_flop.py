"""Flip-flop's error rates in a report, as Liu et al. 2023 report them ("Exposing Attention Glitches with
Flip-Flop Language Modeling", arXiv 2306.00946: the error on the read bits, 1 - accuracy, on a log
axis, for in-distribution FFL(0.8), sparse FFL(0.98) and dense FFL(0.1) sequences; their point is that
rare glitches, errors of 1e-4 and below, survive training).

Per variant x model x train_len x ignore probability: the error rate at each evaluation multiple, mean
over seeds of 1 - token accuracy (posbench/tasks/flip_flop.py scores every read's bit); ``regime`` names
the ignore probability against the run's own ``train_ignore``: ``in-distribution`` (equal), ``sparse``
(more ignores: longer stretches between a write and its read) or ``dense`` (fewer). An error of 0 (every
read of every example right) is drawn at ``FLOOR`` on the log axis and printed ``0``.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

# drawing/plot.py first: it sets matplotlib up (a writable config dir, Agg) before matplotlib is imported
from posbench.report.drawing.plot import plt, save
from matplotlib.ticker import NullFormatter

TASK = "flip_flop"
REGIMES = ("in-distribution", "sparse", "dense")
FLOOR = 1e-4  # where an error of 0 sits on the log axis (below the reads a 16x cell of 32 examples holds)


def regime(ignore: float, train_ignore: float) -> str:
    return "in-distribution" if np.isclose(ignore, train_ignore) else "sparse" if ignore > train_ignore else "dense"


def error_table(frame: pd.DataFrame, train_ignore: Mapping[str, float]) -> pd.DataFrame:
    """One row per variant x model x train_len x ignore probability: ``regime``, the error at each multiple
    (``<m>x``, mean over seeds of 1 - token accuracy) and ``seeds``. ``frame``: task records (task_frame);
    ``train_ignore``: each run's training ignore probability by run id."""
    ff = frame[(frame["task"] == TASK) & frame["token_accuracy"].notna()].copy()
    if ff.empty:
        return pd.DataFrame()
    ff["error"] = 1 - ff["token_accuracy"].astype(float)
    ff["regime"] = [regime(float(c), float(train_ignore.get(r, 0.8))) for c, r in zip(ff["condition"], ff["run_id"])]
    rows = []
    for (variant, model, train_len, ignore, reg), g in ff.groupby(["variant", "model", "train_len", "condition", "regime"]):
        row = {"variant": variant, "model": model, "train_len": train_len, "ignore": ignore, "regime": reg}
        per_seed = g.groupby(["multiple", "seed"])["error"].mean().groupby("multiple").mean()
        row.update({f"{m:g}x": e for m, e in per_seed.items()})
        row["seeds"] = g["seed"].nunique()
        rows.append(row)
    table = pd.DataFrame(rows)
    table["order"] = table["regime"].map(REGIMES.index)
    return table.sort_values(["order", "variant", "model", "train_len"]).drop(columns="order").reset_index(drop=True)


def display_error_table(table: pd.DataFrame) -> pd.DataFrame:
    """As the report prints it: the error in % with two significant digits (0 where every read was right)."""
    shown = table.copy()
    for c in [c for c in table.columns if c.endswith("x")]:
        shown[c] = [("" if np.isnan(v) else "0" if v == 0 else f"{100 * v:.2g}") for v in table[c]]
    return shown


def plot_errors(table: pd.DataFrame, path) -> None:
    """Error rate against evaluation length, both axes logarithmic, one panel per regime (and model,
    train_len), a line per variant; dotted: train_len; an error of 0 at FLOOR."""
    cols = sorted([c for c in table.columns if c.endswith("x")], key=lambda c: float(c[:-1]))
    panels = sorted(table.groupby(["regime", "model", "train_len"]).groups, key=lambda k: (REGIMES.index(k[0]), k[1], k[2]))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False, layout="constrained")
    for ax, (reg, model, train_len) in zip(axes[0], panels):
        sub = table[(table["regime"] == reg) & (table["model"] == model) & (table["train_len"] == train_len)]
        lengths = [round(train_len * float(c[:-1])) for c in cols]
        for _, r in sub.iterrows():
            errors = np.array([r.get(c, np.nan) for c in cols], dtype=float)
            ax.plot(lengths, np.maximum(errors, FLOOR), marker="o", label=f"{r['variant']} (p_i {r['ignore']:g})")
        ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
        ax.axhline(FLOOR, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(FLOOR / 2, 1)
        ax.set_xticks(lengths, [str(x) for x in lengths])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(f"flip-flop, {reg}\n{model}, trained at {train_len}", fontsize=9)
        ax.set_xlabel("evaluation length (tokens)")
        ax.set_ylabel(f"read error (log; 0 drawn at {FLOOR:g})")
        ax.legend(fontsize=7)
    save(fig, path)
