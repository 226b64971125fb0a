"""Training curves: training loss and validation loss against the optimiser step."""

from __future__ import annotations

from posbench.report import figures
from posbench.report.document import Heading, Image, Para
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
        out.figure(FIGURE.name, figures.plot_training_curves, ctx.completed, ctx.histories)
        return [Heading(self.title),
                Para(self.caption),
                Image(FIGURE.name, FIGURE.description)]
