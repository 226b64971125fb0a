"""Loss by position at the longest length: where in the window an encoding stops coping."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

# drawing/plot.py first: it sets matplotlib up (a writable config dir, Agg) before matplotlib is imported
from posbench.report.drawing.plot import PANEL, PLAIN, colour, family_grid, family_of, finish_panel, linestyle, save
from matplotlib.ticker import NullFormatter

from posbench.report.analysis.tables import completed
from posbench.report.drawing.document import Heading, Image, Para
from posbench.report.drawing.figure_layout import first_in_grid_row
from posbench.report.drawing.style import families_in
from posbench.report.section import SECTIONS, Output, Section
from posbench.store.rundir import per_position_key

FIGURE = Output("per_position.png", "loss by position at the longest length")


@SECTIONS.register("per_position")
class PerPosition(Section):
    order = 80
    files = (FIGURE,)
    caption = ("Mean loss at each position of the window (mean over seeds, moving average). The dotted line marks "
              "the training length: positions right of it were never seen in training. Protocols that score only "
              "the last tokens of a window show only those positions.")
    needs_runs, title = True, "Loss by position at the longest length"

    def applies(self, ctx) -> bool:
        return ctx.has_lm

    def build(self, ctx, out) -> list:
        out.figure(FIGURE.name, plot_per_position, ctx.evals, ctx.per_position(ctx.runs))
        return [Heading(self.title),
                Para(self.caption),
                Image(FIGURE.name, FIGURE.description)]


def plot_per_position(evals: pd.DataFrame, per_position: Mapping[str, Mapping[str, np.ndarray]], path: Path) -> None:
    """Mean loss by position at each variant's longest defined length (mean over seeds, moving
    average); one row per (protocol, model, train_len), one column per family of encodings.
    ``per_position``: each run's curves (per_position.npz), by run id."""
    done = completed(evals)
    done = done[done["ppl"].notna()]
    rows = sorted(done.groupby(["protocol", *PANEL]).groups)
    fams = families_in(done["variant"])
    fig, axes = family_grid(len(rows), len(fams))
    for r, (protocol, model, train_len) in enumerate(rows):
        sub = done[(done["protocol"] == protocol) & (done["model"] == model) & (done["train_len"] == train_len)]
        for c, fam in enumerate(fams):
            ax = axes[r][c]
            for variant, g in sub[sub["variant"].map(family_of) == fam].groupby("variant"):
                L = int(g["length"].max())
                key = per_position_key(variant, protocol, L)
                curves = [per_position[rid][key].astype(float) for rid in g[g["length"] == L]["run_id"]
                          if key in per_position.get(rid, {})]
                if not curves:
                    continue
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # positions a protocol never scores stay NaN
                    curve = np.nanmean(np.stack(curves), axis=0)
                x = np.arange(1, L + 1)
                keep = ~np.isnan(curve)
                x, curve = x[keep], curve[keep]
                k = max(1, len(curve) // 64)  # moving average: per-position means over few windows are noisy
                smooth = np.convolve(curve, np.ones(k) / k, mode="valid")
                ax.plot(x[k // 2 : k // 2 + len(smooth)], smooth, color=colour(variant), label=f"{variant} (L={L})", lw=1.2,
                        linestyle=linestyle(variant))
            ax.axvline(train_len, color="grey", linestyle=":", linewidth=1)
            # log x: the first tokens (little context) and the far tail (unseen positions) both stay visible
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(PLAIN)  # 100, not 10^2; no labels on minor ticks
            ax.xaxis.set_minor_formatter(NullFormatter())
            finish_panel(ax, f"{fam}\n{protocol}, {model}, trained at {train_len}", r == len(rows) - 1, first_in_grid_row(c, len(fams)),
                          "position in window (1-based)", "mean loss (nats)", bool(ax.lines[1:]))
    fig.tight_layout()
    save(fig, path)
