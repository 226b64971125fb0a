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
        return [Heading("Summary"),
                Para(budget.budget_paragraph(ctx.convergence, ctx.options.improving)),
                *[Para(p) for p in summary_paragraphs(ctx.table, ctx.options.tolerance)]]
