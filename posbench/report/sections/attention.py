"""Attention: how far and how spread (``eval.attention_stats``): mean attention distance and
entropy against evaluation length, beside uniform attention."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

# drawing/plot.py first: it sets matplotlib up (a writable config dir, Agg) before matplotlib is imported
from posbench.report.drawing.plot import PANEL, PLAIN, colour, finish_panel, plt, save
from matplotlib.ticker import LogLocator, NullFormatter

from posbench.report.drawing.document import Heading, Image, Para
from posbench.report.analysis import task_frames
from posbench.report.section import SECTIONS, Output, Section


def attention(ctx) -> pd.DataFrame:
    """The runs' attention records (``eval.attention_stats``), or as a committed report recorded them.
    Computed once per report (``ctx.derived``)."""
    return ctx.derived("attention", lambda: ctx.recorded.attention if ctx.recorded is not None
                       else task_frames.attention_frame(ctx.all_completed))


@SECTIONS.register("attention")
class Attention(Section):
    order = 70
    files = (Output("attention.csv", "attention distance and entropy per run, length, layer and head"),
             Output("attention.png", "mean attention distance and entropy against evaluation length"))

    def applies(self, ctx) -> bool:
        return not attention(ctx).empty

    def build(self, ctx, out) -> list:
        out.csv("attention.csv", attention(ctx))
        out.figure("attention.png", plot_attention, task_frames.attention_table(attention(ctx)))
        return [Heading("Attention: how far and how spread"),
                Para("Per layer and head, at every evaluation length (`eval.attention_stats`): the mean distance "
                     "from a query to the keys it attends to, sum_j p_ij (i - j), and the entropy of its attention "
                     "weights, averaged over queries and then over layers, heads and seeds. Measured on "
                     "validation text (`text`) or on a task's evaluation examples. Dotted: attention spread evenly "
                     "over every earlier key. An encoding that stays flat by attending locally keeps its distance "
                     "short as the window grows; attention that dilutes drifts towards the dotted lines. "
                     "Every layer and head: `attention.csv`."),
                Image("attention.png", self.files[1].description)]


def plot_attention(att: pd.DataFrame, path: Path) -> None:
    """Mean attention distance and attention entropy (over layers, heads and seeds) against length,
    one line per encoding; one row per source (text, or a task's examples) and model/train_len.
    Dotted: uniform attention over every earlier key (entropy: ln(i + 1) averaged over queries i;
    distance: i / 2 averaged, (L - 1) / 4)."""
    rows = sorted(att.groupby(["source", *PANEL]).groups)
    fig, axes = plt.subplots(len(rows), 2, figsize=(10, 3.4 * len(rows)), squeeze=False)
    for r, (source, model, train_len) in enumerate(rows):
        sub = att[(att["source"] == source) & (att["model"] == model) & (att["train_len"] == train_len)]
        lengths = np.array(sorted(sub["length"].unique()))
        for enc, g in sub.groupby("encoding"):
            g = g.sort_values("length")
            axes[r][0].plot(g["length"], g["mean_distance"], marker="o", ms=3, color=colour(enc), label=enc)
            axes[r][1].plot(g["length"], g["entropy"], marker="o", ms=3, color=colour(enc), label=enc)
        axes[r][0].plot(lengths, (lengths - 1) / 4, color="grey", linestyle=":", lw=1, label="uniform")
        uniform = sub.drop_duplicates("length").sort_values("length")
        axes[r][1].plot(uniform["length"], uniform["uniform entropy"], color="grey", linestyle=":", lw=1, label="uniform")
        for c, (ylabel, log_y) in enumerate([("mean attention distance (tokens)", True), ("attention entropy (nats)", False)]):
            ax = axes[r][c]
            ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
            ax.set_xscale("log")
            if log_y:
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))  # 10, 20, 50, 100, ...
                ax.yaxis.set_major_formatter(PLAIN)
                ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_xticks(lengths, [str(x) for x in lengths])
            ax.xaxis.set_minor_formatter(NullFormatter())
            finish_panel(ax, f"{source}: {model}, trained at {train_len}", r == len(rows) - 1, True,
                          "evaluation length (tokens)", ylabel, c == 1)
    fig.tight_layout()
    save(fig, path)
