"""The map's figure of one axis: the verdict's statistic (on equal context where the row has a window
control, else its M/1x ratio) against the axis, one line per encoding with its 95% band; log x for the
training length and the parameters, one tick per category for the corpus and the tokenizer. One
panel per line's other settings (protocol, and the settings the axis's lines hold), dotted lines at
the classes' borders (flat <= 1 + tolerance < mild <= 1.3 < broken); below each, the same points'
perplexity at 1x (not along the tokenizer: per token of different units)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from posbench.report.drawing import plot
from posbench.report.analysis import points as P
from posbench.report.analysis.verdicts import MILD_LIMIT

plt = plot.plt
MARKERS = "os^Dvp<>hX"


def _x(pts: pd.DataFrame, axis_name: str, values, categories: list) -> np.ndarray:
    if axis_name in (P.TRAIN_LEN, P.ROPE_BASE):
        return np.asarray(values, float)
    if axis_name == P.SIZE:
        return np.asarray([P.axis_value(pts, axis_name, v) for v in values], float)
    return np.asarray([categories.index(v) for v in values], float)


def has_baseline(pts: pd.DataFrame, axis_name: str) -> bool:
    """Whether the figure has the 1x perplexity's row: not along the tokenizer (perplexities per token
    of different units), and only where the points have it."""
    return axis_name != P.TOKENIZER and "ppl_1x" in pts and bool(pts["ppl_1x"].notna().any())


def _lines(ax, sub: pd.DataFrame, pts: pd.DataFrame, axis_name: str, categories: list, column: str,
           variants: list) -> None:
    """One line per encoding of ``sub`` along the axis: ``column`` with its ``_lo`` / ``_hi`` band.
    ``variants``: every row of the figure, in order: a row's marker and offset are its place there, the
    same in every panel (the legend is drawn in one)."""
    order = P.order_key(pts, axis_name)
    for variant, g in sub.groupby("variant"):
        i = variants.index(variant)
        g = g.iloc[sorted(range(len(g)), key=lambda j: order(g[axis_name].iloc[j]))]
        x = _x(pts, axis_name, g[axis_name], categories)
        if axis_name not in P.NUMERIC:  # categories: rows offset a little so that their bars stay apart
            x = x + 0.06 * (i - len(variants) / 2)
        kw = dict(color=plot.colour(variant), linestyle=plot.linestyle(variant), label=variant)
        # a marker of its own per row: the house colours shade one family alike (fire, fox and t5 all
        # purples), and the map puts every family in one panel
        ax.plot(x, g[column], marker=MARKERS[i % len(MARKERS)], ms=4, lw=1.4, **kw)
        ax.fill_between(x, g[f"{column}_lo"].astype(float), g[f"{column}_hi"].astype(float), color=kw["color"],
                        alpha=0.12, lw=0)
    ax.set_yscale("log")
    for which in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):  # 1.3, not 1.3 x 10^0
        which(FuncFormatter(lambda v, _: f"{v:.3g}"))
    if axis_name in P.NUMERIC:
        ax.set_xscale("log")
        ticks = sorted(set(_x(pts, axis_name, sub[axis_name].unique(), categories)))
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(
            (lambda v, _: f"{v:g}") if axis_name in (P.TRAIN_LEN, P.ROPE_BASE) else (lambda v, _: f"{v / 1e6:.2g}M")))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.set_xticks(range(len(categories)), [str(v) for v in categories])


def plot_axis(pts: pd.DataFrame, axis_name: str, tolerance: float, path: Path) -> None:
    """``pts``: points.points (every point); draws the lines along ``axis_name``: the verdict statistic
    in the top row and, below it (has_baseline), the perplexity at 1x of the same points, so that a
    statistic that falls because its baseline rose is seen as such."""
    if P.PATTERN not in pts:  # points made before the layer pattern existed: attention in every layer
        pts = pts.assign(**{P.PATTERN: P.PLAIN})
    if P.ROPE_BASE not in pts:  # points made before the base was a coordinate: none named
        pts = pts.assign(**{P.ROPE_BASE: P.NO_BASE})
    keys = [k for k in P.line_keys(axis_name) if k != "variant"]
    on_line = pts[pts.groupby(P.line_keys(axis_name))[axis_name].transform("nunique") > 1]
    panels = sorted(on_line.groupby(keys).groups, key=lambda k: tuple(map(str, k)))
    categories = sorted(on_line[axis_name].unique(), key=P.order_key(pts, axis_name))
    variants = sorted(on_line["variant"].unique())
    rows = [("stat", "verdict statistic (equal context, else M/1x)")] + \
        ([("ppl_1x", "perplexity at 1x")] if has_baseline(pts, axis_name) else [])
    fig, axes = plt.subplots(len(rows), len(panels), figsize=(5.6 * len(panels), 3.9 * len(rows)), squeeze=False,
                             sharex="col")
    for c, panel in enumerate(panels):
        sub = on_line[(on_line[keys] == pd.Series(panel, index=keys)).all(axis=1)]
        title = ", ".join(f"{k} {v}" for k, v in zip(keys, panel) if v not in (P.DEFAULT_CORPUS, P.PLAIN, P.NO_BASE))
        for r, (column, label) in enumerate(rows):
            ax = axes[r][c]
            _lines(ax, sub, pts, axis_name, categories, column, variants)
            if column == "stat":
                for y in (1 + tolerance, MILD_LIMIT):
                    ax.axhline(y, color="grey", linestyle=":", linewidth=1)
            plot.finish_panel(ax, title if r == 0 else "", r == len(rows) - 1, c == 0, P.AXIS_NAMES[axis_name], label,
                              r == 0 and c == len(panels) - 1)
    fig.tight_layout()
    plot.save(fig, path)
