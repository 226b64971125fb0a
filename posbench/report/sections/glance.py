"""Extrapolation at a glance: one heatmap of every encoding's longest-multiple ratio to 1x."""

from __future__ import annotations

from posbench.report import figures
from posbench.report.drawing.document import Heading, Image, Para
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.analysis.verdicts import MILD_LIMIT, UNDECIDED

FIGURE = Output("ratio_heatmap.png", "perplexity at the longest multiple over 1x, coloured by verdict class")


@SECTIONS.register("glance")
class Glance(Section):
    order = 30
    files = (FIGURE,)

    def applies(self, ctx) -> bool:
        return ctx.has_lm and ctx.ratio_column is not None

    def build(self, ctx, out) -> list:
        tolerance = ctx.options.tolerance
        ratio = out.figure(FIGURE.name, figures.plot_ratio_heatmap, ctx.table, tolerance)
        return [Heading("Extrapolation at a glance"),
                Para(f"Each cell is `{ratio}`, the perplexity at the longest multiple over 1x (mean over seeds). "
                     + colour_legend(ratio, tolerance)),
                Image(FIGURE.name, FIGURE.description)]


def colour_legend(ratio: str, tolerance: float) -> str:
    """What the heatmap's colours and words mean: the verdict classes, at their borders."""
    longest = ratio.split("/")[0]
    return (f"Its colour is the verdict class of that mean, at the verdicts' own borders whatever the data span: "
            f"green flat (at most {1 + tolerance:g}), yellow mild (above {1 + tolerance:g}, at most {MILD_LIMIT:g}), red "
            f"broken (above {MILD_LIMIT:g}). Its word is the class the ratio's 95% interval supports; hatched cells are "
            f"**{UNDECIDED}** (the interval straddles a border, so the colour is the mean's class alone). The headline's "
            f"verdict of a row with a window control is read on equal context (`{longest} on equal context`) and can "
            f"differ from this ratio's class.")
