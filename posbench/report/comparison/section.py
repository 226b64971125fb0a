"""The comparison a user asked for (``--compare a,b,c`` / ``--baseline rope``): paired differences of
log-perplexity against length with their intervals (posbench/report/comparison/frames.py), as a figure and
its CSV. Only when asked: a report without those flags has no such section and no such files."""

from __future__ import annotations

import math

import pandas as pd

from posbench.report.analysis.bootstrap import range_words
from posbench.report.comparison.frames import (
    NOT_SEPARABLE,
    describe_reference,
    extrapolation_tests,
    paired_differences,
    refused_pairs,
)
from posbench.report.comparison.figure import plot_comparison
from posbench.report.drawing.document import Bullets, Heading, Image, Para, Table
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.analysis.stats import ALPHA

FIGURE = Output("comparison.png", "the rows asked for (--compare / --baseline) as paired differences of log-perplexity")
DATA = Output("comparison.csv", "the comparison figure's numbers: each pair's paired difference, 95% interval and test")
EXTRAPOLATION = Output("comparison_extrapolation.csv", "each pair's test of extrapolation: the row's m/1x over the "
                       "reference's, paired by seed, at every multiple past 1x")


@SECTIONS.register("comparison")
class ComparisonSection(Section):
    order = 25  # right after the main table, whose rows it compares
    files = (FIGURE, DATA, EXTRAPOLATION)

    def applies(self, ctx) -> bool:
        return ctx.has_lm and bool(ctx.options.comparison) and not self.frame(ctx).empty

    def frame(self, ctx):
        return ctx.derived("comparison", lambda: paired_differences(ctx.evals, ctx.options.comparison, ctx.token_sets))

    def tests(self, ctx):
        return ctx.derived("comparison_extrapolation",
                           lambda: extrapolation_tests(ctx.evals, ctx.options.comparison, ctx.token_sets))

    def build(self, ctx, out) -> list:
        frame, tests = self.frame(ctx), self.tests(ctx)
        out.csv(DATA.name, frame)
        out.csv(EXTRAPOLATION.name, tests)
        out.figure(FIGURE.name, plot_comparison, frame)
        over = " and ".join(sorted(set(frame["interval"])))
        left = refused_pairs(ctx.evals, ctx.options.comparison)
        left_out = [Para("Left out (they cannot be compared): " + "; ".join(
            f"`{a}` against `{b}` ({', '.join(map(str, panel))}): {why}" for panel, a, b, why in left) + ".")] if left else []
        return [Heading("Comparison"), *extrapolation_blocks(tests, ctx.multiple), *left_out,
                Para(f"The rows asked for, against their reference ({describe_reference(frame)}): at each evaluation length, the "
                     "difference of log-perplexity (row minus reference, nats per token; below 0 the row is better), "
                     "paired by seed id and averaged over the seeds both rows have, with its 95% interval over "
                     f"{over}: the report's own paired interval (Student's t on the per-seed differences with the "
                     "variance of the scored documents added, docs/report.md), as in `pairs.csv`. An interval that "
                     "excludes the zero line is a difference at that length on its own, not corrected for the other "
                     f"lengths; `{DATA.name}` has each p-value (the test of `pairs.csv`; {ALPHA} uncorrected). The "
                     "dotted line is train_len."),
                Image(FIGURE.name, FIGURE.description)]


def extrapolation_blocks(tests: pd.DataFrame, multiple: float | None) -> list:
    """The answer to "does the row extrapolate better than its reference?": one item per pair at the
    verdict's multiple, from the test of the difference of log-ratios only, and the table of every
    multiple."""
    if tests.empty:
        return []
    m = multiple if multiple is not None and (tests["multiple"] == multiple).any() else tests["multiple"].max()
    at = tests[tests["multiple"] == m]
    items = [extrapolation_item(r, m) for _, r in at.iterrows()]
    shown = tests.assign(**{"row / reference (m/1x)": [cell(r) for _, r in tests.iterrows()]})
    shown = shown[["protocol", "model", "train_len", "a", "b", "multiple", "row / reference (m/1x)", "p_value", "word",
                   "seeds", "shared_seeds"]].rename(columns={"a": "row", "b": "reference", "p_value": "p"})
    return [Para(f"**Does the row extrapolate better than its reference?** The test of extrapolation: per seed both "
                 f"rows have, the row's log({m:g}x / 1x) minus the reference's, paired by seed, with the report's "
                 "95% interval (seeds and text); below 1 the row loses less from 1x to the longer length. A row "
                 "lower at every length by the same factor is *not separable* here: the per-length differences "
                 "below answer which row is lower, this one which extrapolates."),
            Bullets(items), Table(shown.round({"p": 4}).reset_index(drop=True))]


def cell(r: pd.Series) -> str:
    if not math.isfinite(r["factor"]):
        return "n/r"
    if not math.isfinite(r["lo"]):
        return f"x{r['factor']:.3f}"
    return f"x{r['factor']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]"


def extrapolation_item(r: pd.Series, m: float) -> str:
    """One pair's sentence: the word, the ratio of ratios with its interval and p, the seeds it rests
    on (each row's count where they differ), and with 2 seeds what a third would need to show."""
    p = "" if not math.isfinite(r["p_value"]) else f", p = {r['p_value']:.3g}"
    s = (f"`{r['a']}` against `{r['b']}` ({r['protocol']}, {r['model']}, train_len {r['train_len']}) at {m:g}x: "
         f"**{r['word']}**, {cell(r)}{p}, {int(r['seeds'])} shared seed{'s' if r['seeds'] != 1 else ''}")
    if r["seeds_a"] != r["seeds"] or r["seeds_b"] != r["seeds"]:
        s += (f" ({r['shared_seeds'] or 'none'}; `{r['a']}` has {int(r['seeds_a'])} evaluated there, `{r['b']}` "
              f"{int(r['seeds_b'])}: the test uses only the shared ones)")
    if r["seeds"] == 2 and r["word"] == NOT_SEPARABLE:
        s += ("; with 2 seeds the seed term has 1 degree of freedom (t = 12.7 for a 95% interval), so only a large, "
              "consistent difference separates; ")
        found = not (pd.isna(r["third_lo"]) and pd.isna(r["third_hi"]))
        s += (f"a third seed would separate them if its ratio of ratios were "
              f"{range_words(r['third_lo'], r['third_hi'], 3)}" if found else "no third seed alone would separate them")
    return s + "."
