"""posbench/report/drawing/png.py: a figure is stored as a 256-colour PNG whose lines keep their
colours, a third or less of matplotlib's bytes; encoding twice changes nothing."""

import io

import numpy as np
from PIL import Image

from posbench.report.drawing import plot
from posbench.report.drawing.png import palette_png


def _figure_png() -> bytes:
    fig, ax = plot.plt.subplots(figsize=(6, 4))
    x = np.linspace(1, 1024, 400)
    for i, name in enumerate(["rope", "alibi", "fox", "nope"]):
        y = np.log(x) * (0.2 + 0.1 * i) + 0.05 * np.sin(x / (7 + i))
        ax.plot(x, y, color=plot.colour(name), label=name)
        ax.fill_between(x, y - 0.1, y + 0.1, color=plot.colour(name), alpha=0.15)
    ax.set_xscale("log")
    ax.legend()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plot.plt.close(fig)
    return buf.getvalue()


def test_a_figure_becomes_a_palette_png_with_its_line_colours_kept():
    original = _figure_png()
    compact = palette_png(original)
    assert compact[:8] == b"\x89PNG\r\n\x1a\n" and Image.open(io.BytesIO(compact)).mode == "P"
    assert len(compact) < len(original) / 2
    before = np.asarray(Image.open(io.BytesIO(original)).convert("RGB")).astype(int)
    after = np.asarray(Image.open(io.BytesIO(compact)).convert("RGB")).astype(int)
    assert np.abs(before - after).max(axis=2).mean() < 1.0  # on average under one level of 255
    for name in ["rope", "alibi", "fox", "nope"]:  # each line's own colour, where it is drawn pure
        rgb = (np.array(plot.plt.matplotlib.colors.to_rgb(plot.colour(name))) * 255).round().astype(int)
        pure = (before == rgb).all(axis=2)
        assert pure.any() and np.abs(after[pure] - rgb).max() <= 6, name


def test_encoding_twice_changes_nothing():
    once = palette_png(_figure_png())
    assert palette_png(once) == once
