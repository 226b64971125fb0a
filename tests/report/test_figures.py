"""posbench/report/figures.py: every row drawn in its encoding's colour and its variant's line style,
one figure per file."""

from posbench.encodings import ENCODINGS
from posbench.report.figures import (
    colour,
    family_of,
    linestyle,
    plot_ppl_vs_length,
    plot_ratio_heatmap,
)


def test_a_row_is_drawn_in_its_encoding_s_colour_and_a_variant_s_line_style():
    assert colour("alibi") == ENCODINGS.get("alibi").colour and family_of("alibi") == ENCODINGS.get("alibi").family
    assert colour("xpos+bca") == colour("xpos") and linestyle("xpos+bca") != linestyle("xpos")  # a window: its own line
    assert linestyle("alibi+temp0.1") == ":"


def test_the_sweep_s_table_makes_its_figures(sweep_context, tmp_path):
    plot_ppl_vs_length(sweep_context.table, tmp_path / "ppl.png")
    ratio = plot_ratio_heatmap(sweep_context.table, tmp_path / "heat.png")
    assert ratio == "4x/1x"
    assert all((tmp_path / f).read_bytes().startswith(b"\x89PNG") for f in ("ppl.png", "heat.png"))
