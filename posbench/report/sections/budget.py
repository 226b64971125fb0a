"""The training budget: how far each run got in learning (the fall of its 1x validation loss over
its last doubling of steps), and a warning when the compared encodings differ already at 1x."""

from __future__ import annotations

from posbench.report import budget
from posbench.report.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Output, Section


@SECTIONS.register("budget")
class Budget(Section):
    order = 40
    files = (Output("convergence.csv", "every run's budget and the fall of its 1x validation loss over the last doubling"),)

    def applies(self, ctx) -> bool:
        return ctx.has_lm

    def build(self, ctx, out) -> list:
        conv, improving, spread = ctx.convergence, ctx.options.improving, ctx.options.spread
        out.csv("convergence.csv", conv)
        blocks = [Heading("Training budget"),
                  Para("How far each run got in learning. `fall over last doubling`: relative fall of the 1x validation "
                       "loss between half the budget and its end (mean over seeds; `estimated`: runs without a validation "
                       "point at half the budget, the fall between the steps compared scaled to one doubling). "
                       f"`still improving`: runs whose loss fell by more than {improving:.0%} (every run in `convergence.csv`)."),
                  Table(budget.budget_table(conv))]
        warnings = budget.spread_warnings(ctx.table, set(ctx.completed["encoding"]), spread)
        if warnings:
            blocks += [Para(f"**Warning:** the compared encodings differ by more than {spread:.0%} already at 1x, where "
                            "published perplexities differ by a few percent:"), *[Para(w) for w in warnings]]
        return blocks
