"""Evaluated during training (``eval.during_training``): 1x perplexity and the longest multiple's
ratio to it against training tokens, and whether the verdicts held over the last two points. It
continues the training-budget section."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

# drawing/plot.py first: it sets matplotlib up (a writable config dir, Agg) before matplotlib is imported
from posbench.report.drawing.plot import BASELINE, PANEL, PLAIN, colour, finish_panel, plt, save
from matplotlib.ticker import FuncFormatter, NullFormatter

from posbench.report.analysis import convergence
from posbench.report.drawing.document import Image, Para, Table
from posbench.report.section import SECTIONS, Output, Section


def during_training(ctx) -> pd.DataFrame:
    """Mean 1x perplexity and ratio against training tokens (empty without eval.during_training): from the
    runs' probes, or as a committed report recorded them. Computed once per report (``ctx.derived``)."""

    def compute() -> pd.DataFrame:
        if ctx.recorded is not None:
            return ctx.recorded.during_training
        probe = convergence.probe_frame(ctx.completed)
        return convergence.probe_curves(probe) if not probe.empty else pd.DataFrame()

    return ctx.derived("during_training", compute)


@SECTIONS.register("during_training")
class DuringTraining(Section):
    order = 41  # right after the training budget (40), which it continues; before the budget axis (42)
    files = (Output("during_training.csv", "1x perplexity and extrapolation ratio at each evaluation during training"),
             Output("during_training.png", "1x perplexity and extrapolation ratio against training tokens"))

    def applies(self, ctx) -> bool:
        return ctx.has_lm and not during_training(ctx).empty

    def build(self, ctx, out) -> list:
        curves, tolerance = during_training(ctx), ctx.options.tolerance
        out.csv("during_training.csv", curves)
        out.figure("during_training.png", plot_during_training, curves)
        wide, notes = convergence.stability(curves, tolerance)
        return [Para("Evaluated during training (`eval.during_training`; nonoverlapping, on the tokens of the "
                     "tables): 1x perplexity and the longest multiple's ratio to it against training tokens. Under "
                     "the cosine schedule a point before the end is a model mid-schedule (learning rate still high), "
                     "not one trained to that budget; the last point is the tables' number."),
                Image("during_training.png", self.files[1].description),
                Para(f"Ratio and verdict at each evaluation step (mean over seeds; flat: within {tolerance:.0%} "
                     f"of 1x, mild: up to {convergence.MILD_LIMIT:g}×, broken: more). " + " ".join(notes)),
                Table(wide.fillna(""))]


def plot_during_training(curves: pd.DataFrame, path: Path) -> None:
    """From ``eval.during_training``: 1x perplexity (top) and the longest multiple's ratio to 1x
    (bottom) against training tokens, one line per encoding (mean over seeds); one column per
    (model, train_len). Log x: the evaluation steps are usually spaced by doublings."""
    panels = sorted(curves.groupby(PANEL).groups)
    fig, axes = plt.subplots(2, len(panels), figsize=(5.2 * len(panels), 7.0), squeeze=False)
    for c, (model, train_len) in enumerate(panels):
        sub = curves[(curves["model"] == model) & (curves["train_len"] == train_len)]
        for encoding, g in sub.groupby("encoding"):
            g = g.sort_values("train_tokens")
            for r, col in enumerate(["ppl_1x", "ratio"]):
                axes[r][c].plot(g["train_tokens"], g[col], marker="o", ms=3, color=colour(encoding), label=encoding,
                                lw=1.5, linestyle="--" if encoding == BASELINE else "-")
        m = sub["multiple"].iloc[0]
        for r, ylabel in enumerate(["1x perplexity", f"{m:g}x / 1x perplexity"]):
            ax = axes[r][c]
            ax.set(xscale="log", yscale="log")
            millions = FuncFormatter(lambda v, _: f"{v / 1e6:g}M")
            ax.xaxis.set_major_formatter(millions)
            ax.xaxis.set_minor_formatter(millions if ax.get_xlim()[1] / ax.get_xlim()[0] < 10 else NullFormatter())
            ax.yaxis.set_major_formatter(PLAIN)
            ax.yaxis.set_minor_formatter(PLAIN)
            if r == 1:
                ax.axhline(1, color="grey", linestyle=":", linewidth=1)
            finish_panel(ax, f"{model}, trained at {train_len}", r == 1, c == 0, "training tokens", ylabel,
                          r == 0 and c == len(panels) - 1)
    fig.tight_layout()
    save(fig, path)
