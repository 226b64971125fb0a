"""Loss by position at the longest length: where in the window an encoding stops coping."""

from __future__ import annotations

from posbench.report import figures
from posbench.report.drawing.document import Heading, Image, Para
from posbench.report.section import SECTIONS, Output, Section

FIGURE = Output("per_position.png", "loss by position at the longest length")


@SECTIONS.register("per_position")
class PerPosition(Section):
    order = 80
    files = (FIGURE,)
    caption = ("Mean loss at each position of the window (mean over seeds, moving average). The dotted line marks "
              "the training length: positions right of it were never seen in training. Protocols that score only "
              "the last tokens of a window show only those positions.")
    needs_runs, title = True, "Loss by position at the longest length"

    def applies(self, ctx) -> bool:
        return ctx.has_lm

    def build(self, ctx, out) -> list:
        out.figure(FIGURE.name, figures.plot_per_position, ctx.evals, ctx.per_position(ctx.runs))
        return [Heading(self.title),
                Para(self.caption),
                Image(FIGURE.name, FIGURE.description)]
