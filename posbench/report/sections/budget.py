"""The training budget: how far each run got in learning (the fall of its 1x validation loss over
its last doubling of steps: between annealed budget branches where there are some), and a warning
when the compared encodings differ already at 1x."""

from __future__ import annotations

from posbench.report.budget import convergence
from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Output, Section

# one run per configuration: the fall within each run (what the reports before budget branches said)
SINGLE = ("How far each run got in learning. `fall over last doubling`: relative fall of the 1x validation loss between "
          "half the budget and its end (mean over seeds; `estimated`: runs without a validation point at half the budget, "
          "the fall between the steps compared scaled to one doubling). `still improving`: runs whose loss fell by more "
          "than {improving:.0%} (every run in `convergence.csv`).")
# several budgets: each configuration at its largest, the fall between annealed models where there are two
BRANCHES = ("How far each run got in learning, at each configuration's largest budget, where the verdicts are read "
            "(every budget in `convergence.csv`). `fall over last doubling`: relative fall of the 1x validation loss "
            "over the last doubling of steps (mean over seeds). `annealed`: between the annealed models of the budget "
            "before and this one (cool-down branches of one trunk: what a longer budget gains). Otherwise within the "
            "run, from half its budget to its end: the learning rate at half the budget is still high, so part of that "
            "fall is the annealing, and it overstates what the model was still learning. `estimated`: the steps "
            "compared are not one doubling apart, the fall scaled to one. `still improving`: runs whose loss fell by "
            "more than {improving:.0%}.")


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
                  Para(BRANCHES.format(improving=improving) if ctx.has_budgets else SINGLE.format(improving=improving)),
                  Table(convergence.convergence_table(convergence.at_largest_budget(conv)))]
        warnings = convergence.spread_warnings(ctx.table, set(ctx.completed["encoding"]), spread)
        if warnings:
            blocks += [Para(f"**Warning:** the compared encodings differ by more than {spread:.0%} already at 1x, where "
                            "published perplexities differ by a few percent:"), *[Para(w) for w in warnings]]
        return blocks
