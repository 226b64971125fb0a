"""Training curves: training loss and validation loss against the optimiser step."""

from __future__ import annotations

from posbench.report import figures
from posbench.report.drawing.document import Heading, Image, Para
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
        out.figure(FIGURE.name, figures.plot_training_curves, runs, ctx.histories)
        return [Heading(self.title),
                Para(caption),
                Image(FIGURE.name, FIGURE.description)]
