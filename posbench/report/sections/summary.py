"""The summary, as lists: how the numbers were scored (protocols, scored text) and the training budget
(no ratio is read without it), then per protocol, model and train_len one item per verdict class,
the ranking and the best, with the windowed controls apart."""

from __future__ import annotations

import re

from posbench.report.analysis import convergence
from posbench.report.analysis.headline import panel_label
from posbench.report.drawing.document import Bullets, Heading
from posbench.report.analysis.prose import protocol_items, scored_text_note, summary_lists
from posbench.report.section import SECTIONS, Section


@SECTIONS.register("summary")
class Summary(Section):
    order = 10

    def applies(self, ctx) -> bool:
        return ctx.has_lm

    def build(self, ctx, out) -> list:
        protocols, same = protocol_items(ctx.evals)
        scored = [*protocols, same, scored_text_note(ctx.evals, ctx.token_sets),
                  convergence.budget_paragraph(convergence.at_largest_budget(ctx.convergence), ctx.options.improving)]
        if not ctx.task_runs.empty:
            scored.append("The task runs are scored by accuracy, in their own section.")
        budgets = []
        if ctx.has_budgets and not ctx.budget_trends.empty:
            lead, items = budget_lists(ctx.budget_trends)
            budgets.append(Bullets(items, lead))
        return [Heading("Summary"), Bullets([s for s in scored if s], "**How the numbers were scored** (protocols, "
                                                                       "text and training budget):"),
                *budgets, *[Bullets(items, lead) for lead, items in summary_lists(ctx.table, ctx.options.tolerance)]]


def budget_lists(trends) -> tuple[str, list[str]]:
    """(lead, items): the runs were trained for several budgets, so every verdict below is at its row's
    largest budget, named with its trend, one item per row (with several panels, per row and verdict, each
    panel's change beside it; as one paragraph a map's ran to 6,000 characters). The section "Verdicts by
    training budget" has every budget."""
    lead = ("**Budgets.** The runs were trained for several budgets; every verdict below is read at its row's "
            f"largest budget ({', '.join(sorted({str(int(s)) for s in trends['largest']}, key=int))} steps):")
    panel = panel_label(trends, [k for k in ("model", "train_len") if k in trends])  # None: one panel
    items = []
    for word, prefix in TREND_LEADS:
        rows = trends[trends["trend"].str.startswith(prefix)]
        if panel is None:  # the lead says the trend's first words; the brackets say the rest
            items += [f"{word}: `{r['variant']}` {r['verdict at largest']} ({_rest(r['trend'], prefix)})."
                      for _, r in rows.iterrows()]
            continue
        # several panels (a map): a row's name once, with each panel's change per doubling; the full words
        # stay in the section "Verdicts by training budget" (one item per row and panel read as a wall)
        for (variant, verdict), group in rows.groupby(["variant", "verdict at largest"], sort=True):
            where = ", ".join(f"{panel[1](r)} ({_change(r['trend'])})" for _, r in group.iterrows())
            items.append(f"{word}: `{variant}` {verdict} at {where}.")
    return lead, items


def _change(trend: str) -> str:
    """The last step's change per doubling of a trend's words ("x1.32 per doubling [1.13, 1.55]")."""
    found = re.search(r"x[0-9.]+ per doubling \[[^\]]*\]", trend)
    return found.group(0) if found else trend


# the trend words of posbench/report/analysis/sweep.py (trend), each with the lead the summary lists it under
TREND_LEADS = (("Stable (paired test, within 5% per doubling)", "stable: "), ("Class stable, ratio moving", "class stable, ratio moving "),
               ("Class stable, change not resolved", "class stable, change not resolved "), ("Moving", "moving: "),
               ("Undecided, ratio moving", "undecided, ratio moving: "), ("Undecided", "undecided: "))


def _rest(trend: str, prefix: str) -> str:
    rest = trend[len(prefix):].strip()
    return rest[1:-1] if rest.startswith("(") and rest.endswith(")") else rest
