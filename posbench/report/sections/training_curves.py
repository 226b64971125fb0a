"""Training curves: training loss and validation loss against the optimiser step."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pandas as pd

from posbench.report.drawing.document import Heading, Image, Para
from posbench.report.drawing.figure_layout import first_in_grid_row
from posbench.report.drawing.plot import PANEL, colour, family_grid, family_of, finish_panel, save
from posbench.report.drawing.style import families_in
from posbench.report.section import SECTIONS, Output, Section

FIGURE = Output("training_curves.png", "training curves")


@SECTIONS.register("training_curves")
class TrainingCurves(Section):
    order = 90
    files = (FIGURE,)
    caption = ("Training loss (line, mean over seeds, smoothed) and validation loss (dots) against the optimiser step.")
    needs_runs, title = True, "Training curves"

    def applies(self, ctx) -> bool:
        return ctx.has_lm

    def build(self, ctx, out) -> list:
        runs, caption = ctx.completed, self.caption
        if ctx.has_budgets:  # one curve per row: its largest budget's runs (a mean over budgets would dip at each cool-down)
            runs = runs[runs["run_id"].isin(set(ctx.evals["run_id"]))]
            caption += (" With budgets: the runs of each row's largest budget (a shorter budget's branch follows the "
                        "same curve up to the start of its own cool-down).")
        out.figure(FIGURE.name, plot_training_curves, runs, ctx.histories)
        return [Heading(self.title),
                Para(caption),
                Image(FIGURE.name, FIGURE.description)]


def plot_training_curves(runs: pd.DataFrame, histories: Mapping[str, pd.DataFrame | None], path: Path) -> None:
    """Training loss against step (mean over seeds, smoothed) and validation loss (dots); one row
    per (model, train_len), one column per family of encodings. ``histories``: each run's
    training curve, by run directory."""
    done = runs[runs["status"] == "completed"]
    rows = sorted(done.groupby(PANEL).groups)
    fams = families_in(done["encoding"])
    fig, axes = family_grid(len(rows), len(fams))
    for r, (model, train_len) in enumerate(rows):
        sub = done[(done["model"] == model) & (done["train_len"] == train_len)]
        for c, fam in enumerate(fams):
            ax = axes[r][c]
            for encoding, g in sub[sub["encoding"].map(family_of) == fam].groupby("encoding"):
                hist = [h for h in (histories.get(d) for d in g["run_dir"]) if h is not None and not h.empty]
                if not hist:
                    continue
                both = pd.concat(hist)
                train = both.groupby("step")["loss"].mean()
                ax.plot(train.index, train.rolling(5, min_periods=1).mean(), color=colour(encoding), label=encoding, lw=1.2)
                if "val_loss" in both:
                    val = both.dropna(subset=["val_loss"]).groupby("step")["val_loss"].mean()
                    ax.plot(val.index, val.values, "o", ms=3, color=colour(encoding))
            finish_panel(ax, f"{fam}\ntraining: {model}, train_len {train_len}", r == len(rows) - 1, first_in_grid_row(c, len(fams)),
                          "step", "loss (nats/byte)", bool(ax.lines))
    fig.tight_layout()
    save(fig, path)
