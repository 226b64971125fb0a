"""convergence.csv: every run's budget and the fall of its validation loss over the last doubling
(ReportContext.kept_convergence: the language models and the task runs). One writer for the file that the
budget section's table and the task section's "Training budget" lines both read, and that a rebuild from
the committed folder reads back (posbench/report/records/committed.py); it shows nothing itself."""

from __future__ import annotations

from posbench.report.section import SECTIONS, Output, Section


@SECTIONS.register("convergence")
class Convergence(Section):
    order = 39
    files = (Output("convergence.csv", "every run's budget and the fall of its validation loss over the last doubling "
                                       "(the language models at 1x, and the task runs)"),)

    def applies(self, ctx) -> bool:
        return ctx.has_lm or not ctx.task_records.empty

    def build(self, ctx, out) -> list:
        out.csv("convergence.csv", ctx.kept_convergence)
        return []
