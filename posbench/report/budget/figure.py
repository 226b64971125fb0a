"""The budget figure: 1x perplexity and the longest multiple's ratio to 1x against training tokens,
one line per row with its 95% band, and the verdict statistic's change per doubling of the budget
(paired by seed) with its 95% interval, one column per (model, train_len)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

from posbench.report.drawing import plot
from posbench.report.analysis.sweep import TOKENS

plt = plot.plt


def plot_budget_axis(table: pd.DataFrame, ratio: str, changes: pd.DataFrame, path: Path) -> None:
    """``table``: budgets.budget_table (one row per main-table row and budget), unwindowed rows only;
    ``changes``: budgets.paired_changes (the third row of panels; none without it)."""
    panels = sorted(table.groupby(plot.PANEL).groups)
    n_rows = 3 if not changes.empty else 2
    fig, axes = plt.subplots(n_rows, len(panels), figsize=(5.6 * len(panels), 3.7 * n_rows), squeeze=False)
    for c, (model, train_len) in enumerate(panels):
        sub = table[(table["model"] == model) & (table["train_len"] == train_len)]
        for variant, g in sub.groupby("variant"):
            g = g.sort_values(TOKENS)
            for r, col in enumerate(["1x", ratio]):
                ax = axes[r][c]
                ax.plot(g[TOKENS], g[col], marker="o", ms=3, lw=1.4, color=plot.colour(variant),
                        linestyle=plot.linestyle(variant), label=variant)
                ax.fill_between(g[TOKENS], g[f"{col}_lo"], g[f"{col}_hi"], color=plot.colour(variant), alpha=0.12, lw=0)
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
            plot.finish_panel(ax, f"{model}, trained at {train_len}", r == 1, c == 0, "training tokens (annealed models)",
                                  ylabel, r == 0 and c == len(panels) - 1)
        if n_rows == 3:
            _plot_changes(axes[2][c], changes[(changes["model"] == model) & (changes["train_len"] == train_len)],
                          sub, c == 0, c == len(panels) - 1)
    fig.tight_layout()
    plot.save(fig, path)


def _plot_changes(ax, changes: pd.DataFrame, sub: pd.DataFrame, first: bool, last: bool) -> None:
    """The change per doubling of each row's verdict statistic, at the larger budget of each step,
    with its 95% interval (rows offset a little along x so that their bars stay apart)."""
    tokens = sub.groupby("budget_steps")[TOKENS].mean()
    variants = sorted(changes["variant"].unique())
    for i, (variant, g) in enumerate(changes.groupby("variant")):
        x = g["to"].map(tokens) * (1 + 0.03 * (variants.index(variant) - len(variants) / 2))
        ax.errorbar(x, g["change"], yerr=[g["change"] - g["change_lo"], g["change_hi"] - g["change"]], fmt="o", ms=3,
                    lw=1.0, capsize=2, color=plot.colour(variant), label=variant)
    ax.axhline(1, color="grey", linestyle=":", linewidth=1)
    ax.axhspan(1 / 1.05, 1.05, color="grey", alpha=0.1, lw=0)  # the equivalence margin of "stable"
    ax.set(xscale="log", yscale="log")
    ax.xaxis.set_major_locator(FixedLocator(sorted(tokens.dropna().unique())))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e6:.2f}M"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    _perplexity_ticks(ax)
    plot.finish_panel(ax, "change per doubling (grey: +-5%)", True, first, "training tokens at the larger budget",
                          "verdict statistic, x per doubling", False)


def _perplexity_ticks(ax) -> None:
    """Plain labels on a log y axis, as many as its range leaves room for: every integer step within
    a decade, 1-2-5 across several (labelling every minor tick of a wide range writes them over each other)."""
    lo, hi = ax.get_ylim()
    subs = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0) if hi / lo < 4 else (1.0, 2.0, 5.0) if hi / lo > 12 else (1.0, 2.0, 3.0, 5.0, 7.0)
    ax.yaxis.set_major_locator(LogLocator(subs=subs))
    ax.yaxis.set_major_formatter(plot.PLAIN)
    ax.yaxis.set_minor_formatter(NullFormatter())
