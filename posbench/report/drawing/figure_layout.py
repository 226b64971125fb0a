"""How the report's figures are laid out so that each stays readable at page width (about 1200 px):
family figures wrap their family columns at FAMILY_COLUMNS, a panel holds at most MAX_LINES lines,
the lines of one panel never share both colour and line style, and a colour bar's ticks keep apart.
Layout only: what a figure draws comes from its topic (the section's module, or the topic package's
figure.py), and every row's own colour from posbench/report/drawing/style.py."""

from __future__ import annotations

import math

import numpy as np

from posbench.report.drawing.style import families_in, row_order, row_style

FAMILY_COLUMNS = 3  # 3 panels of 4.3 in at 100 dpi: about the page's width, so a panel is shown near full size
MAX_LINES = 8  # more lines than this in one panel can no longer be told apart
LINESTYLES = ("-", "--", "-.", ":")


def wrapped_grid(n_panel_rows: int, n_families: int) -> tuple[int, int]:
    """(grid rows, grid columns) when each panel row's families wrap at FAMILY_COLUMNS."""
    cols = max(1, min(FAMILY_COLUMNS, n_families))
    return n_panel_rows * math.ceil(n_families / cols), cols


def family_axes(fig_axes, n_panel_rows: int, n_families: int) -> list[list]:
    """The axes of panel row ``r`` and family ``c`` as ``axes[r][c]`` in a wrapped grid (wrapped_grid),
    with a shared y axis along each panel row and the grid's unused axes hidden."""
    per_row = math.ceil(n_families / max(1, min(FAMILY_COLUMNS, n_families)))
    cols = fig_axes.shape[1]
    out = []
    for r in range(n_panel_rows):
        cells = [fig_axes[r * per_row + c // cols][c % cols] for c in range(n_families)]
        for ax in cells[1:]:
            ax.sharey(cells[0])
        out.append(cells)
    for ax in fig_axes.flat[n_panel_rows * per_row * cols:]:
        ax.axis("off")
    for r in range(n_panel_rows):  # the empty cells at the end of a wrapped panel row
        for k in range(n_families, per_row * cols):
            fig_axes[r * per_row + k // cols][k % cols].axis("off")
    return out


def first_in_grid_row(c: int, n_families: int) -> bool:
    """Whether family ``c`` opens a grid row (its panel carries the y label)."""
    return c % max(1, min(FAMILY_COLUMNS, n_families)) == 0


def chunks(names: list, size: int = MAX_LINES) -> list[list]:
    """``names`` cut into panels of at most ``size``, as evenly as possible (9 lines: 5 and 4, not 8 and 1)."""
    if not names:
        return []
    n = math.ceil(len(names) / size)
    return [list(part) for part in np.array_split(np.array(names, dtype=object), n)]


def distinct_styles(styles: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """Each line's (colour, line style), changed only where two lines of one panel would look alike:
    the later one keeps its colour and takes the first line style its colour has not used yet."""
    used: set[tuple[str, str]] = set()
    out = {}
    for name, (colour, style) in styles.items():
        if (colour, style) in used:
            style = next((s for s in LINESTYLES if (colour, s) not in used), style)
        used.add((colour, style))
        out[name] = (colour, style)
    return out


# colour-bar ticks, most wanted first: 1 (no change), then round factors either way
PREFERRED_TICKS = (1, 2, 0.5, 4, 0.25, 8, 16, 32, 1.5, 0.67, 3, 6, 1.25, 0.8, 1.1, 0.9, 1.05, 0.95)
MAX_TICKS = 7


def log_colourbar_ticks(vmin: float, vmax: float) -> list[float]:
    """Ticks for a log colour bar from ``vmin`` to ``vmax``: the most wanted values that keep at least
    1/MAX_TICKS of the bar apart (the labels never overlap), sorted; five evenly spaced (in log) ticks
    with two decimals where fewer than three round values fit."""
    span = math.log(vmax / vmin)
    gap = span / MAX_TICKS
    chosen: list[float] = []
    for t in PREFERRED_TICKS:
        if vmin <= t <= vmax and all(abs(math.log(t / c)) >= gap for c in chosen):
            chosen.append(t)
    if len(chosen) < 3:
        chosen = [round(float(t), 2) for t in np.geomspace(vmin, vmax, 5)]
    return sorted(set(chosen))


def family_columns(variants) -> list[tuple[str, list[str]]]:
    """The columns of a family figure: per family (in style.families_in order) its rows in their
    order, cut into panels of at most MAX_LINES lines (the baseline drawn beside them is the one more);
    a family cut in several is titled "rotary (1/2)", ...."""
    names = sorted(set(variants), key=row_order)
    out = []
    for fam in families_in(names):
        parts = chunks([n for n in names if row_style(n).family == fam])
        out += [(fam if len(parts) == 1 else f"{fam} ({i + 1}/{len(parts)})", part) for i, part in enumerate(parts)]
    return out
