"""The summary: the training budget in one paragraph (no ratio is read without it), then per
protocol, model and train_len which encodings stayed flat, which broke and which was best."""

from __future__ import annotations

from posbench.report import budget
from posbench.report.document import Heading, Para
from posbench.report.prose import summary_paragraphs
from posbench.report.section import SECTIONS, Section


@SECTIONS.register("summary")
class Summary(Section):
    order = 10

    def applies(self, ctx) -> bool:
        return ctx.has_lm

    def build(self, ctx, out) -> list:
        blocks = [Heading("Summary"),
                  Para(budget.budget_paragraph(ctx.convergence, ctx.options.improving)),
                  *[Para(p) for p in summary_paragraphs(ctx.table, ctx.options.tolerance)]]
        if ctx.has_budgets and not ctx.budget_trends.empty:
            blocks.insert(2, Para(budget_headline(ctx.budget_trends)))
        return blocks


def budget_headline(trends) -> str:
    """The runs were trained for several budgets: every verdict below is at its row's largest budget,
    named with its trend (the section "Verdicts by training budget" has every budget)."""
    settled = trends[trends["trend"].str.startswith("settled")]
    moving = trends[trends["trend"].str.startswith("still moving")]
    text = ("**Budgets.** The runs were trained for several budgets; every verdict below is read at its row's "
            f"largest budget ({', '.join(sorted({str(int(s)) for s in trends['largest']}, key=int))} steps). ")
    if not settled.empty:
        text += "Settled: " + ", ".join(f"`{r['variant']}` {r['verdict at largest']} ({r['trend']})"
                                        for _, r in settled.iterrows()) + ". "
    if not moving.empty:
        text += "Still moving: " + ", ".join(f"`{r['variant']}` {r['verdict at largest']} ({r['trend']})"
                                            for _, r in moving.iterrows()) + ". "
    return text.strip()
