"""Attention: how far and how spread (``eval.attention_stats``): mean attention distance and
entropy against evaluation length, beside uniform attention."""

from __future__ import annotations

from posbench.report import figures, tasks
from posbench.report.drawing.document import Heading, Image, Para
from posbench.report.section import SECTIONS, Output, Section


@SECTIONS.register("attention")
class Attention(Section):
    order = 70
    files = (Output("attention.csv", "attention distance and entropy per run, length, layer and head"),
             Output("attention.png", "mean attention distance and entropy against evaluation length"))

    def applies(self, ctx) -> bool:
        return not ctx.attention.empty

    def build(self, ctx, out) -> list:
        out.csv("attention.csv", ctx.attention)
        out.figure("attention.png", figures.plot_attention, tasks.attention_table(ctx.attention))
        return [Heading("Attention: how far and how spread"),
                Para("Per layer and head, at every evaluation length (`eval.attention_stats`): the mean distance "
                     "from a query to the keys it attends to, sum_j p_ij (i - j), and the entropy of its attention "
                     "weights, averaged over queries and then over layers, heads and seeds. Measured on "
                     "validation text (`text`) or on a task's evaluation examples. Dotted: attention spread evenly "
                     "over every earlier key. An encoding that stays flat by attending locally keeps its distance "
                     "short as the window grows; attention that dilutes drifts towards the dotted lines. "
                     "Every layer and head: `attention.csv`."),
                Image("attention.png", self.files[1].description)]
