"""The comparison a user asked for (``--compare a,b,c`` / ``--baseline rope``): paired differences of
log-perplexity against length with their intervals (posbench/report/comparison/frames.py), as a figure and
its CSV. Only when asked: a report without those flags has no such section and no such files."""

from __future__ import annotations

from posbench.report.comparison.frames import describe, paired_differences
from posbench.report.comparison.figure import plot_comparison
from posbench.report.drawing.document import Heading, Image, Para
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.analysis.stats import ALPHA

FIGURE = Output("comparison.png", "the rows asked for (--compare / --baseline) as paired differences of log-perplexity")
DATA = Output("comparison.csv", "the comparison figure's numbers: each pair's paired difference, 95% interval and test")


@SECTIONS.register("comparison")
class Comparison(Section):
    order = 25  # right after the main table, whose rows it compares
    files = (FIGURE, DATA)

    def applies(self, ctx) -> bool:
        return ctx.has_lm and bool(ctx.options.comparison) and not self.frame(ctx).empty

    def frame(self, ctx):
        return ctx.derived("comparison", lambda: paired_differences(ctx.evals, ctx.options.comparison, ctx.token_sets))

    def build(self, ctx, out) -> list:
        frame = self.frame(ctx)
        out.csv(DATA.name, frame)
        out.figure(FIGURE.name, plot_comparison, frame)
        over = " and ".join(sorted(set(frame["interval"])))
        return [Heading("Comparison"),
                Para(f"The rows asked for, against their reference ({describe(frame)}): at each evaluation length, the "
                     "difference of log-perplexity (row minus reference, nats per token; below 0 the row is better), "
                     "paired by seed id and averaged over the seeds both rows have, with its 95% interval over "
                     f"{over}: the report's own paired interval (Student's t on the per-seed differences with the "
                     "variance of the scored documents added, docs/report.md), as in `pairs.csv`. An interval that "
                     "excludes the zero line is a difference at that length on its own, not corrected for the other "
                     f"lengths; `{DATA.name}` has each p-value (the test of `pairs.csv`; {ALPHA} uncorrected). The "
                     "dotted line is train_len."),
                Image(FIGURE.name, FIGURE.description)]
