"""The budget figure: 1x perplexity and the longest multiple's ratio to 1x against training tokens,
one line per row with its 95% band, one column per (model, train_len)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

from posbench.report import figures
from posbench.report.budgets import TOKENS

plt = figures.plt


def plot_budget_axis(table: pd.DataFrame, ratio: str, path: Path) -> None:
    """``table``: budgets.budget_table (one row per main-table row and budget), unwindowed rows only."""
    panels = sorted(table.groupby(figures.PANEL).groups)
    fig, axes = plt.subplots(2, len(panels), figsize=(5.6 * len(panels), 7.4), squeeze=False)
    for c, (model, train_len) in enumerate(panels):
        sub = table[(table["model"] == model) & (table["train_len"] == train_len)]
        for variant, g in sub.groupby("variant"):
            g = g.sort_values(TOKENS)
            for r, col in enumerate(["1x", ratio]):
                ax = axes[r][c]
                ax.plot(g[TOKENS], g[col], marker="o", ms=3, lw=1.4, color=figures.colour(variant),
                        linestyle=figures.linestyle(variant), label=variant)
                ax.fill_between(g[TOKENS], g[f"{col}_lo"], g[f"{col}_hi"], color=figures.colour(variant), alpha=0.12, lw=0)
        for r, ylabel in enumerate(["1x perplexity", f"{ratio} perplexity"]):
            ax = axes[r][c]
            ax.set(xscale="log", yscale="log")
            # a tick at each budget (the only x values there are), labelled in tokens as the budget table is
            ax.xaxis.set_major_locator(FixedLocator(sorted(sub[TOKENS].dropna().unique())))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e6:.2f}M"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            if r == 1:
                ax.axhline(1, color="grey", linestyle=":", linewidth=1)
            _perplexity_ticks(ax)  # after the line at 1, which may widen the range
            figures._finish_panel(ax, f"{model}, trained at {train_len}", r == 1, c == 0, "training tokens (annealed models)",
                                  ylabel, r == 0 and c == len(panels) - 1)
    fig.tight_layout()
    figures.save(fig, path)


def _perplexity_ticks(ax) -> None:
    """Plain labels on a log y axis, as many as its range leaves room for: every integer step within
    a decade, 1-2-5 across several (labelling every minor tick of a wide range writes them over each other)."""
    lo, hi = ax.get_ylim()
    subs = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0) if hi / lo < 4 else (1.0, 2.0, 5.0) if hi / lo > 12 else (1.0, 2.0, 3.0, 5.0, 7.0)
    ax.yaxis.set_major_locator(LogLocator(subs=subs))
    ax.yaxis.set_major_formatter(figures.PLAIN)
    ax.yaxis.set_minor_formatter(NullFormatter())
