"""The task figures: accuracy against evaluation length (one panel per family of encodings, like the
perplexity figure) and, per task, the length x condition heatmap (the needle-in-a-haystack grid for
passkey)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

# drawing/plot.py first: it sets matplotlib up (a writable config dir, Agg) before matplotlib is imported
from posbench.report.drawing.plot import PANEL, family_grid, family_lines, finish_panel, plt, save
from matplotlib.ticker import NullFormatter

from posbench.report.drawing.figure_layout import family_columns, first_in_grid_row
from posbench.tasks import TASKS

METRIC_WORDS = {"exact": "exact match", "token_accuracy": "token accuracy"}


def plot_task_accuracy(table: pd.DataFrame, path: Path) -> None:
    """Task accuracy against evaluation length, one row of panels per (task, model, train_len) and one
    panel per family of encodings (at most MAX_LINES lines each, figure_layout.py), like the perplexity
    figure; a line per variant (mean over the grid's conditions and seeds; band: 95% interval over
    examples and seeds); nope, the baseline, dashed in every family; dashed grey: the chance level
    (``chance`` of the table) where every run of the panel shares it."""
    rows = sorted(table.groupby(["task", *PANEL]).groups)
    cols = sorted([c for c in table.columns if c.endswith("x")], key=lambda c: float(c[:-1]))
    fams = family_columns(table["variant"])
    fig, axes = family_grid(len(rows), len(fams))
    for r, (task, model, train_len) in enumerate(rows):
        sub = table[(table["task"] == task) & (table["model"] == model) & (table["train_len"] == train_len)]
        lengths = np.array([round(train_len * float(c[:-1])) for c in cols])
        chance = sub["chance"].dropna().unique()
        for c, (fam, names) in enumerate(fams):
            ax = axes[r][c]
            members = family_lines(ax, sub, names, cols, lengths, scale=100.0, alpha=0.15)
            ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
            if len(chance) == 1:
                ax.axhline(100 * chance[0], color="grey", linestyle="--", linewidth=1, label="chance")
            ax.set_xscale("log")
            ax.set_xticks(lengths, [str(x) for x in lengths])
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_ylim(-3, 103)
            finish_panel(ax, f"{fam}\n{task}, {model}, trained at {train_len}", r == len(rows) - 1,
                          first_in_grid_row(c, len(fams)), "evaluation length (tokens)",
                          f"{METRIC_WORDS[getattr(TASKS.find(task), 'metric', 'exact')]} (%)", len(members) > 0)
    fig.tight_layout()
    save(fig, path)


def plot_task_heatmaps(heat: pd.DataFrame, task: str, condition: str, path: Path) -> None:
    """The length x condition grid of one task (the needle-in-a-haystack heatmap for passkey), one
    panel per variant (and model, train_len): mean accuracy over seeds, green right, red wrong."""
    sub = heat[heat["task"] == task]
    panels = sorted(sub.groupby(["variant", *PANEL]).groups)
    n_cols = min(5, len(panels))
    n_rows = -(-len(panels) // n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(3.2 * n_cols, 2.8 * n_rows), squeeze=False, layout="constrained")
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for k, (ax, (variant, model, train_len)) in enumerate(zip(axes.flat, panels)):
        g = sub[(sub["variant"] == variant) & (sub["model"] == model) & (sub["train_len"] == train_len)]
        grid = g.pivot_table(index="condition", columns="length", values="accuracy", dropna=False)
        im = ax.imshow(100 * grid.to_numpy(dtype=float), cmap="RdYlGn", vmin=0, vmax=100, aspect="auto", origin="lower")
        ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns], fontsize=7)
        ax.set_yticks(range(grid.shape[0]), [f"{c:g}" for c in grid.index], fontsize=7)
        for (i, j), v in np.ndenumerate(grid.to_numpy(dtype=float)):
            if not np.isnan(v):
                ax.text(j, i, f"{100 * v:.0f}", ha="center", va="center", fontsize=6)
        ax.set_title(f"{variant} ({model}, {train_len})", fontsize=9)
        ax.set_xlabel("evaluation length", fontsize=8)
        if k % n_cols == 0:  # the panels are close together: one label per row
            ax.set_ylabel(condition, fontsize=8)
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label=f"{METRIC_WORDS[getattr(TASKS.find(task), 'metric', 'exact')]} (%)")
    save(fig, path)
