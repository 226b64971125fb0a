"""posbench/report/drawing/plot.py: the plot helpers every topic's figure shares: a row's colour and
line style are its encoding's (the same in every figure), the family grid has one panel per family,
and a figure is written as a PNG file."""

from posbench.report.drawing import plot
from posbench.report.drawing.style import row_style


def test_a_row_is_drawn_in_its_encoding_s_style_in_every_figure():
    for row in ["rope", "nope", "alibi"]:
        assert plot.colour(row) == row_style(row).colour
        assert plot.linestyle(row) == row_style(row).linestyle
        assert plot.family_of(row) == row_style(row).family


def test_a_figure_is_saved_as_a_png_and_closed(tmp_path):
    fig, axes = plot.family_grid(1, 2)
    assert len(axes) == 1 and len(axes[0]) == 2
    plot.finish_panel(axes[0][0], "t", True, True, "x", "y", False)
    plot.save(fig, tmp_path / "f.png")
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plot.plt.get_fignums()
