"""Records not compared: within a panel only numbers scored on the same tokens are compared; the
records on another token set are listed here instead of being ranked against the others (and in
``not_compared.csv``, so that a rebuild from the committed records lists them too). Rows recorded
for an encoding their variant does not apply to (report/records/load.py) are named here too (a rebuild
reads the names from manifest.json: posbench/report/records/manifest.py)."""

from __future__ import annotations

from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Output, Section


@SECTIONS.register("not_compared")
class NotCompared(Section):
    order = 120
    files = (Output("not_compared.csv", "the records scored on another token set than their panel's, in no table"),)

    def applies(self, ctx) -> bool:
        return (ctx.has_lm and not ctx.left_out.empty) or bool(ctx.not_applicable)

    def build(self, ctx, out) -> list:
        blocks = [Heading("Records not compared")]
        if ctx.not_applicable:
            blocks.append(Para(
                "Rows recorded for an encoding their variant does not apply to, left out of every table and figure: "
                + ", ".join(f"`{name}`" for name in ctx.not_applicable) + ". Each equals its encoding's own row by "
                "construction (e.g. a logn or floor-log temperature where every layer has a window or a temperature of "
                "its own); the code that recorded them predates the variant saying so."))
        if ctx.left_out.empty:
            return blocks
        out.csv("not_compared.csv", ctx.left_out)
        return blocks + [
                Para("Within a protocol, model and train_len the report compares only numbers scored on the same "
                     "tokens: the token set with the most records. These records were scored on another set (other "
                     "`eval.scored_tokens`, `eval.first_scored` or fixed-target settings, or made before token sets "
                     "were recorded), so they are in no table or figure. Re-evaluate the runs with the settings of "
                     "the others to include them."),
                Table(ctx.left_out.rename(columns={"token_set": "scored on", "compared_set": "the panel compares"}))]
