"""The main table: mean perplexity over seeds at every multiple of train_len, with intervals,
significance against the best, the longest multiple's ratio to 1x and the extrapolation length;
its CSV, markdown and LaTeX forms, the per-run and pairwise tables, and its figure."""

from __future__ import annotations

from posbench.report import figures
from posbench.report.document import Heading, Image, Para, Table
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.stats import ALPHA
from posbench.report.budget import MILD_LIMIT
from posbench.report.tables import NOT_DEFINED, NOT_EVALUATED, comparisons, display_table, latex_table, run_summary


@SECTIONS.register("perplexity")
class Perplexity(Section):
    order = 20
    files = (
        Output("table.csv", "the main table with std, intervals and p-values"),
        Output("table.md", "the main table as shown in this report"),
        Output("table.tex", "the main table for LaTeX"),
        Output("runs.csv", "summary metrics of every run (before averaging seeds)"),
        Output("pairs.csv", "the pre-declared comparisons (each row against the best of each column), Holm-corrected"),
        Output("evaluations.csv", "every evaluation record compared in the tables"),
        Output("ppl_vs_length.png", "perplexity against evaluation length"),
    )

    def applies(self, ctx) -> bool:
        return ctx.has_lm

    def build(self, ctx, out) -> list:
        table, tolerance, evals = ctx.table, ctx.options.tolerance, ctx.evals
        out.csv("evaluations.csv", evals)
        out.csv("runs.csv", run_summary(evals, tolerance))
        out.csv("pairs.csv", comparisons(table))
        out.csv("table.csv", table)
        shown = display_table(table)
        out.text("table.md", shown.to_markdown(index=False, disable_numparse=True) + "\n")
        out.text("table.tex", latex_table(table))
        out.figure("ppl_vs_length.png", figures.plot_ppl_vs_length, table)
        ratio = ctx.ratio_column
        over = " and ".join(sorted(set(table["interval"])))
        return [
            Heading("Perplexity by evaluation length"),
            Para(f"Mean perplexity over seeds [95% interval over {over}: a bootstrap that draws seeds, then the scored "
                 "validation documents of each seed; see docs/report.md]. **Bold**: lowest mean in its column within the "
                 "same protocol, model and train_len; ≈: not significantly different from it (bootstrap test of the mean "
                 f"log-perplexity, Holm-corrected over the panel's comparisons, adjusted p ≥ {ALPHA}). "
                 f"`{NOT_DEFINED}`: the encoding is not defined at that length (a learned table past its size); "
                 f"`{NOT_EVALUATED}`: not evaluated at that length (for at least one seed) on the compared tokens. "
                 + (f"`{ratio}`: mean over seeds of the longest multiple's perplexity over 1x, its interval and verdict: "
                    f"flat when the whole interval is within {1 + tolerance:g}, mild inside ({1 + tolerance:g}, "
                    f"{MILD_LIMIT:g}], broken above {MILD_LIMIT:g}, undecided when it straddles a border. " if ratio else "")
                 + "`mean log-ppl (rank)`: the mean log-perplexity over every evaluated length, with the row's rank in its "
                 "panel (low only for a row good at 1x and at every length). "
                 f"`extrap. len`: the longest length up to which every evaluated length stays within {tolerance:.0%} of 1x. "
                 "Rows with an evaluation-time window (`+bca`, `+swa…`, StreamingLLM's `+streaming`) are controls: read them beside the row without it."),
            Table(shown),
            Image("ppl_vs_length.png", "perplexity against evaluation length (bands: 95% interval over text and seeds)"),
        ]
