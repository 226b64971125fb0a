"""The answer first: right under the title, one table per kind of run (language models, tasks) with
every encoding's verdict and the numbers behind it (posbench/report/analysis/headline.py), then the table of
contents. The sections after it explain and qualify these rows."""

from __future__ import annotations

from posbench.report.analysis import headline
from posbench.report.analysis import convergence
from posbench.report.drawing.document import Bullets, Contents, Heading, Para, Table
from posbench.report.section import SECTIONS, Section
from posbench.report.analysis import task_frames


@SECTIONS.register("headline")
class Headline(Section):
    order = 5

    def build(self, ctx, out) -> list:
        blocks = [Heading("Headline")]
        if ctx.has_lm:
            ratio = ctx.ratio_column
            conv = convergence.at_largest_budget(ctx.convergence)  # the budget the verdicts are read at
            trends = ctx.budget_trends if ctx.has_budgets else None
            shown, keys, classes = headline.lm_headline(ctx.table, conv, trends=trends)
            blocks += [Table(shown, keys, classes, css="headline", cell_class=headline.verdict_cells(shown)),
                       # the columns one item each: as one paragraph the legend ran past 1,000 characters
                       Bullets([item for item in (
                           *(headline_ratio_words(ratio, shown) if ratio else ()),
                           "`rank over lengths`: by mean log-perplexity over the lengths, 1 the lowest (rows equal at "
                           "its printed three decimals share a rank; the summary's `rank at 1x` is by 1x perplexity alone)",
                           ("`window / full`: perplexity at the longest length with a window of train_len keys "
                            "over without it (above 1: the row uses far context)" if "window / full" in shown else ""),
                           "`budget`: what the runs trained for",
                           ("`trend`: how the verdict moved over the budgets, tested paired by seed (section Verdicts by "
                            "training budget)" if "trend" in shown else "")) if item],
                           lead=("One row per encoding and panel (first column), the rows grouped by panel and within one" if len(shown.columns)
                                 and shown.columns[0] in ("protocol", "panel") else "One row per encoding,")
                           + " by verdict (flat, mild, undecided, broken, none) and then by rank over lengths; the "
                           "colour of a verdict is its class. Click a header to sort.")]
            controls, ckeys, cclasses = headline.lm_headline(ctx.table, conv, windowed=True, trends=trends)
            if not controls.empty:
                blocks += [Para("Windowed controls (an evaluation-time window limits what each query sees; not in the "
                                "verdicts above):"),
                           Table(controls, ckeys, cclasses, css="headline", cell_class=headline.verdict_cells(controls))]
        if not ctx.task_records.empty:
            table = task_frames.task_table(ctx.task_records, ctx.options.threshold)
            scored = ctx.all_completed[ctx.all_completed["run_id"].isin(set(ctx.task_records["run_id"]))]
            conv = ctx.convergence_of(scored)
            if not conv.empty:
                conv = conv.merge(scored[["run_id", "task"]], on="run_id")
            shown, keys, classes = headline.task_headline(table, conv)
            blocks += [Table(shown, keys, classes, css="headline"),
                       Para("Synthetic tasks: accuracy in % at train_len and at the longest multiple [95% interval over "
                            "examples and seeds], mean beyond train_len, and the effective length; read each row "
                            "against its task's chance row.")]
        return blocks + [Contents()]


def headline_ratio_words(ratio: str, shown) -> tuple[str, ...]:
    """The legend items of the verdict and ratio columns."""
    longest = ratio.split("/")[0]
    if f"{longest} on equal context [95%]" not in shown:
        return (f"`{ratio}`: the longest multiple's perplexity over 1x, and the verdict its 95% interval supports",)
    return (f"`verdict`: read from `{longest} on equal context`, the {longest} perplexity over the best the same weights "
            f"do with at most train_len keys per token (the lower of their 1x and their window control at {longest}), "
            f"by its 95% interval (rows without a window control: from `{ratio}`, on unequal context)",
            f"`{ratio}`: the "
            "ratio to 1x on non-overlapping windows, descriptive (a 1x token sees half the keys a local model's "
            f"{longest} token sees)")
