"""Tuned learning rates (``experiment=lr_grid``): each encoding at the setting chosen for it on
1x validation loss alone, beside the main table's default setting (posbench/report/analysis/tuning.py)."""

from __future__ import annotations

from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Output, Section
from posbench.report.analysis.tables import display_table
from posbench.report.analysis.tuning import DEFAULT, grid_edge_warning


@SECTIONS.register("tuning")
class Tuning(Section):
    order = 110
    files = (Output("table_tuned.csv", "the main table at each encoding's tuned learning rate"),
             Output("tuning.csv", "every learning-rate setting's 1x validation loss, and the one chosen"))

    # a rebuilt report keeps only the default setting's records (the main table's): the grid's is carried over
    needs_runs, title = True, "Tuned learning rates"
    caption = ("These runs were trained at several learning rates (`train.lr`) and learning-rate multipliers of the "
               "encoding's own parameters (`encoding.lr_mult`). The table above shows every encoding at the default "
               f"setting (lr {DEFAULT[0]:g}, lr_mult {DEFAULT[1]:g}, one learning rate for every encoding). The setting "
               "chosen for each encoding on 1x validation loss alone (mean final validation loss over seeds; "
               "extrapolation played no part in the choice) and the main table at those settings are in "
               "`table_tuned.csv`; every setting's loss in `tuning.csv`. A setting is chosen over the common one "
               "only where it beats every other by at least 2 seed standard deviations of that loss (`seed_sd`, "
               "the root of the median of the settings' seed variances; `decision` says what decided, and marks a "
               "grid read on one seed as not read on evidence).")

    def applies(self, ctx) -> bool:
        return ctx.has_lm and ctx.tuned is not None

    def build(self, ctx, out) -> list:
        choices = ctx.choices
        out.csv("table_tuned.csv", ctx.tuned)
        out.csv("tuning.csv", choices)
        cols = ["encoding", "model", "train_len", "lr", "lr_mult", "val_loss", "seeds"]
        cols += [c for c in ("seed_sd", "decision") if c in choices]  # a committed tuning.csv from before may lack them
        picked = choices[choices["chosen"]][cols]
        blocks = [Heading(self.title), Para(self.caption + " Below, each encoding at its chosen setting, then the "
                                             "main table at those settings."),
                  Table(picked.round({"val_loss": 4, "seed_sd": 4}))]
        if (edge := grid_edge_warning(choices)) is not None:
            blocks.append(Para(edge))
        blocks.append(Table(display_table(ctx.tuned)))
        return blocks
