"""The main table: mean perplexity over seeds at every multiple of train_len, with intervals,
significance against the best, the longest multiple's ratio to 1x and the extrapolation length;
its CSV, markdown and LaTeX forms, the per-run and pairwise tables, and its figure."""

from __future__ import annotations

from posbench.report import figures
from posbench.report.document import Heading, Image, Para, Table
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.stats import ALPHA
from posbench.report.tables import NOT_DEFINED, NOT_EVALUATED, display_table, latex_table, pairwise_tests, run_summary


@SECTIONS.register("perplexity")
class Perplexity(Section):
    order = 20
    files = (
        Output("table.csv", "the main table with std, intervals and p-values"),
        Output("table.md", "the main table as shown in this report"),
        Output("table.tex", "the main table for LaTeX"),
        Output("runs.csv", "summary metrics of every run (before averaging seeds)"),
        Output("pairs.csv", "paired tests between every two encodings of a panel"),
        Output("evaluations.csv", "every evaluation record compared in the tables"),
        Output("ppl_vs_length.png", "perplexity against evaluation length"),
    )

    def applies(self, ctx) -> bool:
        return ctx.has_lm

    def build(self, ctx, out) -> list:
        table, tolerance, evals = ctx.table, ctx.options.tolerance, ctx.evals
        out.csv("evaluations.csv", evals)
        out.csv("runs.csv", run_summary(evals, tolerance))
        out.csv("pairs.csv", pairwise_tests(evals))
        out.csv("table.csv", table)
        shown = display_table(table)
        out.text("table.md", shown.to_markdown(index=False, disable_numparse=True) + "\n")
        out.text("table.tex", latex_table(table))
        out.figure("ppl_vs_length.png", figures.plot_ppl_vs_length, table)
        seeds, ratio = int(table["seeds"].max()), ctx.ratio_column
        return [
            Heading("Perplexity by evaluation length"),
            Para("Mean perplexity over seeds"
                 + (" ± half-width of the 95% t-interval" if seeds > 1 else "")
                 + ". **Bold**: lowest mean in its column within the same protocol, model and train_len"
                 + (f"; ≈: not significantly different from it (paired t-test over shared seeds on log perplexity, p ≥ {ALPHA})" if seeds > 1 else "")
                 + f". `{NOT_DEFINED}`: the encoding is not defined at that length (a learned table past its size); "
                 + f"`{NOT_EVALUATED}`: not evaluated at that length (for at least one seed) on the compared tokens. "
                 + (f"`{ratio}`: mean over seeds of the longest multiple's perplexity over 1x. " if ratio else "")
                 + f"`extrap. len`: the longest length up to which every evaluated length stays within {tolerance:.0%} of 1x."),
            Table(shown),
            Image("ppl_vs_length.png", "perplexity against evaluation length" + (" (bands: 95% interval over seeds)" if seeds > 1 else "")),
        ]
