"""Extrapolation at a glance: one heatmap of every encoding's longest-multiple ratio to 1x."""

from __future__ import annotations

from posbench.report import figures
from posbench.report.document import Heading, Image, Para
from posbench.report.section import SECTIONS, Output, Section

FIGURE = Output("ratio_heatmap.png", "perplexity at the longest multiple over 1x")


@SECTIONS.register("glance")
class Glance(Section):
    order = 30
    files = (FIGURE,)

    def applies(self, ctx) -> bool:
        return ctx.has_lm and ctx.ratio_column is not None

    def build(self, ctx, out) -> list:
        ratio = out.figure(FIGURE.name, figures.plot_ratio_heatmap, ctx.table)
        return [Heading("Extrapolation at a glance"),
                Para(f"Each cell is `{ratio}`, the perplexity at the longest multiple over 1x (mean over seeds): "
                     "green stays flat, red breaks."),
                Image(FIGURE.name, FIGURE.description)]
