"""Extrapolation at a glance: one heatmap of every encoding's longest-multiple ratio to 1x."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

# drawing/plot.py first: it sets matplotlib up (a writable config dir, Agg) before matplotlib is imported
from posbench.report.drawing.plot import PANEL, family_of, plt, save
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.patches import Rectangle
from matplotlib.ticker import NullFormatter

from posbench.report.drawing.document import Heading, Image, Para
from posbench.report.drawing.style import row_order
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
        ratio = out.figure(FIGURE.name, plot_ratio_heatmap, ctx.table, tolerance)
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


# the verdict classes' colours (the ends and middle of RdYlGn): a cell's colour is the class of its mean
VERDICT_COLOURS = {"flat": "#1a9850", "mild": "#fee08b", "broken": "#d73027"}
BROKEN_TOP = 1e3  # the broken class's upper edge on the bar; a larger ratio takes the broken colour too


def verdict_norm(tolerance: float) -> tuple[ListedColormap, BoundaryNorm]:
    """The heatmap's colours, anchored at the verdict borders of posbench/report/analysis/verdicts.py and not
    stretched to the data: flat up to 1 + ``tolerance`` (inclusive, as ``verdict`` reads it), mild up
    to MILD_LIMIT (inclusive), broken above. A BoundaryNorm bins [b_i, b_i+1), so each border is
    moved to the next float above it: a ratio exactly at a border takes its verdict's colour."""
    cmap = ListedColormap(list(VERDICT_COLOURS.values()), name="verdicts").with_extremes(
        under=VERDICT_COLOURS["flat"], over=VERDICT_COLOURS["broken"])
    borders = [0.0, *(float(np.nextafter(b, np.inf)) for b in (1 + tolerance, MILD_LIMIT)), BROKEN_TOP]
    return cmap, BoundaryNorm(borders, cmap.N)


def _cell_word(word) -> str:
    """The class printed in a cell: the ratio's interval verdict, "(no interval)" on its own line."""
    word = str(word) if isinstance(word, str) and word and word != "n/a" else ""
    return word.replace(", no interval", "\n(no interval)")


def plot_ratio_heatmap(table: pd.DataFrame, tolerance: float, path: Path) -> str | None:
    """One heatmap: encodings (rows, grouped by family) x (protocol, model, train_len) columns. Each
    cell's colour is the verdict class of the longest multiple's mean ratio to 1x (``verdict_norm``:
    the borders of the verdicts, whatever the data span), its text the ratio and the class its 95%
    interval supports (``verdict_16x_1x``: flat / mild / broken, or undecided, hatched, where the
    interval straddles a border). Returns the ratio column's name (None if the table has none)."""
    ratio = next((c for c in table.columns if c.endswith("/1x")), None)
    if ratio is None:
        return None
    variants = sorted(table["variant"].unique(), key=row_order)
    grid = table.pivot_table(index="variant", columns=["protocol", *PANEL], values=ratio, dropna=False).reindex(variants)
    # only the panels the table has: the product of every protocol, model and train_len (dropna=False) gave
    # the map 9 empty columns of 16 (tiny and base were trained at 64 only)
    present = set(map(tuple, table[["protocol", *PANEL]].drop_duplicates().itertuples(index=False)))
    grid = grid[[c for c in grid.columns if tuple(c) in present]]
    values = grid.to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(2.6 + 0.95 * grid.shape[1], 1.0 + 0.42 * grid.shape[0]))
    cmap, norm = verdict_norm(tolerance)
    im = ax.imshow(values, cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(grid.shape[1]), [f"{p}\n{m} L={t}" for p, m, t in grid.columns], fontsize=7, rotation=0)
    ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=8)
    longest = ratio.split("/")[0]

    def cells(column: str):
        if column not in table:
            return None
        return table.pivot_table(index="variant", columns=["protocol", *PANEL], values=column, aggfunc="first",
                                 dropna=False).reindex(index=grid.index, columns=grid.columns)

    notes = cells(f"{longest}_note")
    words = cells("verdict_16x_1x" if "verdict_16x_1x" in table else "verdict")
    for (i, j), v in np.ndenumerate(values):
        if np.isnan(v):
            note = notes.iat[i, j] if notes is not None and isinstance(notes.iat[i, j], str) and notes.iat[i, j] else "n/e"
            ax.text(j, i, note, ha="center", va="center", fontsize=7)
            continue
        word = _cell_word(words.iat[i, j]) if words is not None else ""
        mild = 1 + tolerance < v <= MILD_LIMIT  # yellow: black text; white on the dark green and red
        if word == UNDECIDED:  # the interval straddles a border: the colour is the mean's class alone
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor="#777777", lw=0))
        ax.text(j, i, f"{v:.2f}" + (f"\n{word}" if word else ""), ha="center", va="center", fontsize=6.5,
                color="black" if mild else "white", fontweight="bold" if word == UNDECIDED else "normal")
    protocols = [p for p, _, _ in grid.columns]
    for j in range(1, len(protocols)):  # a line between protocols
        if protocols[j] != protocols[j - 1]:
            ax.axvline(j - 0.5, color="black", lw=1.5)
    fams = [family_of(v) for v in grid.index]
    for i in range(1, len(fams)):  # and between families
        if fams[i] != fams[i - 1]:
            ax.axhline(i - 0.5, color="white", lw=2)
    ax.set_title(f"perplexity ratio {ratio} (mean over seeds) and the class of its 95% interval", fontsize=9)
    # one block per class, as wide as the others: the bar is a legend of the classes, not a scale
    bounds = norm.boundaries
    centres = [(a + b) / 2 for a, b in zip(bounds[:-1], bounds[1:])]
    bar = fig.colorbar(im, ax=ax, shrink=0.8, spacing="uniform", ticks=centres)
    bar.set_ticks(centres, labels=[f"flat\n<= {1 + tolerance:g}", f"mild\n<= {MILD_LIMIT:g}", f"broken\n> {MILD_LIMIT:g}"])
    bar.ax.tick_params(labelsize=7)
    bar.set_label(f"verdict class of the mean {ratio}", fontsize=8)
    bar.ax.yaxis.set_minor_formatter(NullFormatter())
    fig.tight_layout()
    save(fig, path)
    return ratio
