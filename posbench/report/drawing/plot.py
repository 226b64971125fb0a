"""The report's plot helpers, shared by every topic's figure (matplotlib, files only): each row's
colour and line style from its encoding (style.py), the family grid (one panel per family, wrapped:
figure_layout.py), a panel's finish, one family's lines with their bands (nope, the baseline, dashed in
every family), and the one way a figure is written (PNG at 100 dpi, 256 colours, atomically; with
``vector_copies(True)``, also a PDF of it beside the PNG: posbench-report --vector)."""

from __future__ import annotations

import io
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from posbench.report.drawing.mplconfig import use_writable_config_dir

use_writable_config_dir()  # before matplotlib is imported: no warnings about an unwritable HOME

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from posbench.core.files import atomic_write_bytes  # noqa: E402
from posbench.report.drawing.png import palette_png, vector_path  # noqa: E402
from posbench.report.drawing.figure_layout import distinct_styles, family_axes, wrapped_grid  # noqa: E402
from posbench.report.drawing.style import row_style  # noqa: E402

PANEL = ["model", "train_len"]
PLAIN = FuncFormatter(lambda v, _: f"{v:g}")
BASELINE = "nope"


def colour(row: str):
    return row_style(row).colour


def linestyle(row: str) -> str:
    return row_style(row).linestyle


def family_of(row: str) -> str:
    return row_style(row).family


def family_grid(n_rows: int, n_families: int):
    """Panels of the family figures: one panel per family, wrapped at FAMILY_COLUMNS so that each is
    shown near full size on the page, a shared y axis along each row of panels (figure_layout.py)."""
    grid_rows, grid_cols = wrapped_grid(n_rows, n_families)
    fig, axes = plt.subplots(grid_rows, grid_cols, figsize=(4.3 * grid_cols, 3.4 * grid_rows), squeeze=False)
    return fig, family_axes(axes, n_rows, n_families)


def finish_panel(ax, title: str, last_row: bool, first_col: bool, xlabel: str, ylabel: str, legend: bool) -> None:
    """Small title and ticks, a grid, axis labels on the outer panels only, a legend if asked."""
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=7)
    ax.grid(True, alpha=0.3)
    if last_row:
        ax.set_xlabel(xlabel)
    if first_col:
        ax.set_ylabel(ylabel)
    if legend:
        ax.legend(fontsize=7)


# whether save also writes a vector copy: set around one section's figure (SectionOutput.figure) from
# posbench-report --vector, so that no plotting function has to carry the flag
_VECTOR = ContextVar("posbench_report_vector_copies", default=False)


@contextmanager
def vector_copies(on: bool):
    """Within it, ``save`` also writes each figure as a PDF beside its PNG (``vector_path``)."""
    token = _VECTOR.set(on)
    try:
        yield
    finally:
        _VECTOR.reset(token)


def save(fig, path: Path) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    vector = None
    if _VECTOR.get():
        out = io.BytesIO()
        # no creation date: the same figure gives the same bytes (a rebuild compares them)
        fig.savefig(out, format="pdf", bbox_inches="tight", metadata={"CreationDate": None})
        vector = out.getvalue()
    plt.close(fig)
    atomic_write_bytes(path, palette_png(buf.getvalue()))
    if vector is not None:
        atomic_write_bytes(vector_path(path), vector)


def family_lines(ax, sub: pd.DataFrame, names, cols: list[str], lengths: np.ndarray, scale: float,
                  alpha: float) -> pd.DataFrame:
    """One family's panel: a line per row of ``sub`` in ``names`` (``cols``: its value at each length,
    with ``_lo`` / ``_hi`` for the band, times ``scale``), no two lines alike in colour and style, and
    nope, the baseline, dashed and without a band where it is not of the family; a row measured at fewer
    than three lengths is markers without a line. Returns the members."""
    members = sub[sub["variant"].isin(names)]
    baseline = sub[sub["variant"] == BASELINE] if BASELINE not in names else sub.iloc[0:0]
    drawn = pd.concat([members, baseline])
    styles = distinct_styles({v: (colour(v), linestyle(v)) for v in drawn["variant"]})
    for _, row in drawn.iterrows():
        mean = scale * row[cols].to_numpy(dtype=float)
        lo = scale * row[[f"{m}_lo" for m in cols]].to_numpy(dtype=float)
        hi = scale * row[[f"{m}_hi" for m in cols]].to_numpy(dtype=float)
        ok = ~np.isnan(mean)
        dashed = row["variant"] == BASELINE and BASELINE not in names
        # a line says how perplexity goes between the lengths; through two measured points (the map's 1x and
        # 16x) it would draw a course nobody measured: markers only there
        style = "none" if ok.sum() < 3 else "--" if dashed else styles[row["variant"]][1]
        ax.plot(lengths[ok], mean[ok], marker="o", ms=3 if ok.sum() >= 3 else 5, color=colour(row["variant"]),
                label=row["variant"], linestyle=style, lw=1 if dashed else 1.5)
        band = ok & ~np.isnan(lo) & ~np.isnan(hi)
        if band.any() and not dashed:
            ax.fill_between(lengths[band], lo[band], hi[band], color=colour(row["variant"]), alpha=alpha, lw=0)
    return members
