"""posbench/report/drawing/plot.py: the plot helpers every topic's figure shares: a row's colour and
line style are its encoding's (the same in every figure), the family grid has one panel per family,
and a figure is written as a PNG file."""

from posbench.encodings import ENCODINGS
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


def test_with_vector_copies_a_figure_is_also_a_pdf_of_the_same_bytes_each_time(tmp_path):
    def draw(path):
        fig, axes = plot.family_grid(1, 1)
        axes[0][0].plot([1, 2, 4], [3.0, 2.5, 2.4])
        plot.save(fig, path)

    draw(tmp_path / "plain.png")
    assert not (tmp_path / "plain.pdf").exists()  # off by default
    with plot.vector_copies(True):
        draw(tmp_path / "f.png")
        first = (tmp_path / "f.pdf").read_bytes()
        draw(tmp_path / "f.png")
    assert first[:5] == b"%PDF-" and b"%%EOF" in first[-16:]
    assert (tmp_path / "f.pdf").read_bytes() == first  # no creation date: a rebuild writes the same file
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and not plot.plt.get_fignums()
    draw(tmp_path / "g.png")  # the copies end with the block
    assert not (tmp_path / "g.pdf").exists()


def test_a_row_is_drawn_in_its_encoding_s_colour_and_a_variant_s_line_style():
    assert plot.colour("alibi") == ENCODINGS.get("alibi").colour and plot.family_of("alibi") == ENCODINGS.get("alibi").family
    assert plot.colour("xpos+bca") == plot.colour("xpos") and plot.linestyle("xpos+bca") != plot.linestyle("xpos")  # a window: its own line
    assert plot.linestyle("alibi+temp0.1") == ":"


def test_a_row_measured_at_two_lengths_is_markers_and_one_at_three_is_a_line():
    """The map scores 1x and 16x only: a line between them would draw a course nobody measured."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from posbench.report.drawing.plot import family_lines

    cols = ["1x", "2x", "4x"]
    sub = pd.DataFrame([{"variant": "rope", "1x": 5.0, "2x": np.nan, "4x": 9.0},
                        {"variant": "alibi", "1x": 5.0, "2x": 5.1, "4x": 5.2}])
    for c in cols:
        sub[f"{c}_lo"], sub[f"{c}_hi"] = sub[c] * 0.9, sub[c] * 1.1
    fig, ax = plt.subplots()
    family_lines(ax, sub, ["rope", "alibi"], cols, np.array([64, 128, 256]), scale=1.0, alpha=0.2)
    styles = {line.get_label(): line.get_linestyle() for line in ax.lines}
    assert styles["rope"] == "None" and styles["alibi"] not in ("None", "")
    assert list(next(line for line in ax.lines if line.get_label() == "rope").get_xdata()) == [64, 256]
    plt.close(fig)
