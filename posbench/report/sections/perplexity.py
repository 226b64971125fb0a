"""The main table: perplexity (geometric mean over seeds) at every multiple of train_len, with intervals,
significance against the best, the longest multiple's ratio to 1x and the extrapolation length;
its CSV, markdown and LaTeX forms, the per-run and pairwise tables, and its figure."""

from __future__ import annotations

from posbench.report import figures
from posbench.report.document import Heading, Image, Para, Table
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.stats import ALPHA
from posbench.report.tables import (
    NOT_DEFINED,
    NOT_EVALUATED,
    NOT_RESOLVABLE,
    comparisons,
    display_table,
    latex_table,
    row_caveats,
    run_summary,
)
from posbench.report.verdicts import FAR_MARGIN, MILD_LIMIT


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
        # every record compared, at every budget (the main table reads each row's largest): a report
        # rebuilt from this file (report/committed.py) has what this one had
        out.csv("evaluations.csv", ctx.budget_evals)
        out.csv("runs.csv", run_summary(evals, tolerance))
        out.csv("pairs.csv", comparisons(table))
        out.csv("table.csv", table)
        shown = display_table(table)
        out.text("table.md", shown.to_markdown(index=False, disable_numparse=True) + "\n")
        out.text("table.tex", latex_table(table))
        out.figure("ppl_vs_length.png", figures.plot_ppl_vs_length, table)
        ratio = ctx.ratio_column
        over = " and ".join(sorted(set(table["interval"])))
        has_far = "far_gain" in table and table["far_gain"].notna().any()
        return [
            Heading("Perplexity by evaluation length"),
            Para(f"Perplexity: the geometric mean over seeds [95% interval over {over}: Student's t on the per-seed "
                 "log-perplexities with the variance of the scored validation documents added (docs/report.md)]. "
                 "**Bold**: lowest mean in its column within the same protocol, model and train_len; ≈: not "
                 "significantly different from it (Holm-corrected over the panel's comparisons, adjusted p ≥ "
                 f"{ALPHA}; rows of other weights are tested over seeds, rows of the same weights over documents); "
                 f"`{NOT_RESOLVABLE}`: the difference from the best cannot be resolved with the seeds there are "
                 "(one seed: no seed variance to test a difference between two trained models against). "
                 f"`{NOT_DEFINED}`: the encoding is not defined at that length (a learned table past its size); "
                 f"`{NOT_EVALUATED}`: not evaluated at that length (for at least one seed) on the compared tokens. "
                 + (f"`{ratio}`: the longest multiple's perplexity over 1x, its interval and verdict: "
                    f"flat when the whole interval is within {1 + tolerance:g}, mild inside ({1 + tolerance:g}, "
                    f"{MILD_LIMIT:g}], broken above {MILD_LIMIT:g}, undecided when it straddles a border; a flat row "
                    "with a window control says whether it uses far context. " if ratio else "")
                 + (f"`window control / full`: perplexity at the longest length with a sliding window of train_len keys "
                    "in every layer (the row's `+swaL`) over without it, same weights and documents: above "
                    f"{1 + FAR_MARGIN:g} (the whole interval) the row **uses far context**; below, it is **local** (it "
                    "gains nothing from keys past train_len, whatever its ratio). " if has_far else "")
                 + "`mean log-ppl (rank)`: the mean log-perplexity over every evaluated length, with the row's rank in its "
                 "panel (tied where no test separates two rows; low only for a row good at 1x and at every length). "
                 f"`extrap. len`: the longest length up to which every evaluated length stays within {tolerance:.0%} of 1x. "
                 "Rows with an evaluation-time window (`+bca`, `+swa…`, StreamingLLM's `+streaming`) are controls: read them beside the row without it."
                 + "".join(f" {note}" for note in row_caveats(table["variant"]))),
            Table(shown),
            Image("ppl_vs_length.png", "perplexity against evaluation length (bands: 95% interval over text and seeds)"),
        ]
