"""Evaluated during training (``eval.during_training``): 1x perplexity and the longest multiple's
ratio to it against training tokens, and whether the verdicts held over the last two points. It
continues the training-budget section."""

from __future__ import annotations

from posbench.report import figures
from posbench.report.budget import convergence
from posbench.report.drawing.document import Image, Para, Table
from posbench.report.section import SECTIONS, Output, Section


@SECTIONS.register("during_training")
class DuringTraining(Section):
    order = 41  # right after the training budget (40), which it continues; before the budget axis (42)
    files = (Output("during_training.csv", "1x perplexity and extrapolation ratio at each evaluation during training"),
             Output("during_training.png", "1x perplexity and extrapolation ratio against training tokens"))

    def applies(self, ctx) -> bool:
        return ctx.has_lm and not ctx.during_training.empty

    def build(self, ctx, out) -> list:
        curves, tolerance = ctx.during_training, ctx.options.tolerance
        out.csv("during_training.csv", curves)
        out.figure("during_training.png", figures.plot_during_training, curves)
        wide, notes = convergence.stability(curves, tolerance)
        return [Para("Evaluated during training (`eval.during_training`; nonoverlapping, on the tokens of the "
                     "tables): 1x perplexity and the longest multiple's ratio to it against training tokens. Under "
                     "the cosine schedule a point before the end is a model mid-schedule (learning rate still high), "
                     "not one trained to that budget; the last point is the tables' number."),
                Image("during_training.png", self.files[1].description),
                Para(f"Ratio and verdict at each evaluation step (mean over seeds; flat: within {tolerance:.0%} "
                     f"of 1x, mild: up to {convergence.MILD_LIMIT:g}×, broken: more). " + " ".join(notes)),
                Table(wide.fillna(""))]
