"""The main table: perplexity (geometric mean over seeds) at every multiple of train_len, with intervals,
significance against the best, the longest multiple's ratio to 1x and the extrapolation length;
its CSV, markdown and LaTeX forms, the per-run and pairwise tables, and its figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

# drawing/plot.py first: it sets matplotlib up (a writable config dir, Agg) before matplotlib is imported
from posbench.report.drawing.plot import PANEL, PLAIN, family_grid, family_lines, save
from matplotlib.ticker import NullFormatter

from posbench.report.drawing.document import Bullets, Heading, Image, Table, markdown_table
from posbench.report.drawing.figure_layout import family_columns, first_in_grid_row
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.analysis.stats import ALPHA
from posbench.report.analysis.tables import (
    NOT_DEFINED,
    NOT_EVALUATED,
    NOT_RESOLVABLE,
    ONE_DOC,
    comparisons,
    display_table,
    latex_table,
    paper_table,
    multiple_columns,
    row_caveats,
    run_summary,
)
from posbench.report.analysis.verdicts import FAR_MARGIN, MILD_LIMIT


@SECTIONS.register("perplexity")
class Perplexity(Section):
    order = 20
    files = (
        Output("table.csv", "the main table with std, intervals and p-values"),
        Output("table.md", "the main table as shown in this report"),
        Output("table.tex", "the main table for LaTeX"),
        Output("table_paper.tex", "the main table for a paper: booktabs, at most 7 columns, the rows without controls"),
        Output("runs.csv", "summary metrics of every run (before averaging seeds)"),
        Output("pairs.csv", "the pre-declared comparisons (each row against the best of each column), Holm-corrected"),
        Output("evaluations.csv.gz", "every evaluation record compared in the tables (a gzip-compressed CSV, "
                                     "as pandas.read_csv reads it; a rebuild reads it back)"),
        Output("ppl_vs_length.png", "perplexity against evaluation length"),
    )

    def applies(self, ctx) -> bool:
        return ctx.has_lm

    def build(self, ctx, out) -> list:
        table, tolerance, evals = ctx.table, ctx.options.tolerance, ctx.evals
        # every record compared, at every budget (the main table reads each row's largest): a report
        # rebuilt from this file (report/records/committed.py) has what this one had
        out.csv("evaluations.csv.gz", ctx.budget_evals)  # compressed: about a third of the bytes in the repository
        out.csv("runs.csv", run_summary(evals, tolerance))
        out.csv("pairs.csv", comparisons(table))
        out.csv("table.csv", table)
        shown = display_table(table)
        out.text("table.md", markdown_table(shown) + "\n")
        out.text("table.tex", latex_table(table))
        out.text("table_paper.tex", paper_table(table, ctx.ratio_column))
        out.figure("ppl_vs_length.png", plot_ppl_vs_length, table)
        ratio = ctx.ratio_column
        over = " and ".join(sorted(set(table["interval"])))
        has_far = "far_gain" in table and table["far_gain"].notna().any()
        has_equal = "equal_ctx" in table and table["equal_ctx"].notna().any()
        return [
            Heading("Perplexity by evaluation length"),
            # the legend as one item per column or mark: as one paragraph it ran to 3,000 characters
            Bullets([item.strip() for item in legend_items(table, ratio, tolerance, over, has_far, has_equal) if item.strip()],
                    lead="How to read the table:"),
            Table(shown),
            Image("ppl_vs_length.png", "perplexity against evaluation length (bands: 95% interval over text and seeds)"),
        ]


def legend_items(table: pd.DataFrame, ratio: str | None, tolerance: float, over: str, has_far: bool,
                 has_equal: bool) -> list[str]:
    """The main table's legend, one item per column or mark."""
    return [
        f"Perplexity: the geometric mean over seeds [95% interval over {over}: Student's t on the per-seed "
        "log-perplexities with the variance of the scored validation documents added (docs/report.md)].",
        "**Bold**: lowest mean in its column within the same protocol, model and train_len; ≈: not "
        "significantly different from it (Holm-corrected over the panel's comparisons, adjusted p ≥ "
        f"{ALPHA}; rows of other weights are tested over seeds, rows of the same weights over documents).",
        f"`{NOT_RESOLVABLE}`: the difference from the best cannot be resolved with the seeds there are "
        "(one seed: no seed variance to test a difference between two trained models against).",
        f"`{ONE_DOC}`: leaving one scored document out turns the sign of the difference from the best "
        "(`pairs.csv` gives each difference's range with each document left out and the largest document's "
        "share).",
        f"`{NOT_DEFINED}`: the encoding is not defined at that length (a learned table past its size); "
        f"`{NOT_EVALUATED}`: not evaluated at that length (for at least one seed) on the compared tokens.",
        verdict_legend(ratio, tolerance, has_equal) if ratio else "",
        (f"`window control / full`: perplexity at the longest length with a sliding window of train_len keys "
         "in every attention layer (the row's `+swaL`; a recurrent layer reads each token after train_len to "
         "2 train_len - 1 tokens, itself included, from a zero state: at least what the window gives) over "
         "without it, same weights and documents: above "
         f"{1 + FAR_MARGIN:g} (the whole interval) the row **uses far context**; below, it is **local** (it "
         "gains nothing from keys past train_len, whatever its ratio)." if has_far else ""),
        "`mean log-ppl (rank over lengths)`: the mean log-perplexity over every evaluated length up to the verdict's "
        "multiple, with the row's rank in its panel: 1 the lowest (low only for a row good at 1x and at every length), "
        "rows equal at the printed three decimals share a rank (1, 2, 2, 4); a rank orders, the Holm-corrected ≈ "
        "marks test.",
        f"`extrap. len`: the longest length up to which every evaluated length stays within {tolerance:.0%} of 1x.",
        "Rows with an evaluation-time window (`+bca`, `+swa…`, StreamingLLM's `+streaming`) are controls: read them "
        "beside the row without it." + "".join(f" {note}" for note in row_caveats(table["variant"])),
    ]


def verdict_legend(ratio: str, tolerance: float, equal: bool) -> str:
    """The words for the ratio and verdict columns: where rows have a window control the verdict is read on
    equal context (docs/protocols.md), and the ratio to 1x is descriptive."""
    longest = ratio.split("/")[0]
    classes = (f"flat when the whole interval is within {1 + tolerance:g}, mild inside ({1 + tolerance:g}, "
               f"{MILD_LIMIT:g}], broken above {MILD_LIMIT:g}, undecided when it straddles a border; a flat row "
               "with a window control says whether it uses far context. ")
    if not equal:
        return f"`{ratio}`: the longest multiple's perplexity over 1x, its interval and verdict: " + classes
    return (f"`{ratio}`: the longest multiple's perplexity over 1x on non-overlapping windows, descriptive: a 1x token "
            f"sees train_len / 2 keys on average, a {longest} token many more, so a model that reads only its last "
            f"train_len keys reads below 1 here. `{longest} on equal context`: the verdict's statistic, the {longest} "
            f"perplexity over the best the same weights do with at most train_len keys per token (the lower of their 1x "
            f"and their window control at {longest}, per seed), its interval and verdict: " + classes
            + f"Rows without a window control keep the `{ratio}` verdict, on unequal context, and say so. ")


def plot_ppl_vs_length(table: pd.DataFrame, path: Path) -> None:
    """Perplexity against length, log-log; one row per (protocol, model, train_len), one column per
    family of encodings (shared y axis within a row); line = mean over seeds, band = 95% t-interval
    (two or more seeds), both read from the main table so that the figure shows the table's numbers."""
    cols = multiple_columns(table)
    rows = sorted(table.groupby(["protocol", *PANEL]).groups)
    fams = family_columns(table["variant"])
    fig, axes = family_grid(len(rows), len(fams))
    for r, (protocol, model, train_len) in enumerate(rows):
        sub = table[(table["protocol"] == protocol) & (table["model"] == model) & (table["train_len"] == train_len)]
        lengths = np.array([round(train_len * float(m[:-1])) for m in cols])
        for c, (fam, names) in enumerate(fams):
            ax = axes[r][c]
            members = family_lines(ax, sub, names, cols, lengths, scale=1.0, alpha=0.2)
            ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
            ax.set(xscale="log", yscale="log", title=f"{fam}\n{protocol}, {model}, trained at {train_len}")
            ax.title.set_fontsize(9)
            ax.set_xticks(lengths, [str(x) for x in lengths], fontsize=7)
            ax.xaxis.set_minor_formatter(NullFormatter())  # only the evaluated lengths are labelled
            ax.yaxis.set_major_formatter(PLAIN)  # 20, not 2 x 10^1
            ax.yaxis.set_minor_formatter(PLAIN)
            ax.tick_params(axis="y", which="both", labelsize=7)
            ax.grid(True, which="both", alpha=0.3)
            if r == len(rows) - 1:
                ax.set_xlabel("evaluation length (tokens)")
            if first_in_grid_row(c, len(fams)):
                ax.set_ylabel("perplexity")
            if len(members):
                ax.legend(fontsize=7)
    fig.tight_layout()
    save(fig, path)
