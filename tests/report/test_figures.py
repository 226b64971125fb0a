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
    ratio = plot_ratio_heatmap(sweep_context.table, 0.05, tmp_path / "heat.png")
    assert ratio == "4x/1x"
    assert all((tmp_path / f).read_bytes().startswith(b"\x89PNG") for f in ("ppl.png", "heat.png"))


def test_the_heatmap_colours_are_anchored_at_the_verdict_borders_not_stretched_to_the_data():
    """A value just below and just above each border (flat | mild at 1 + tolerance, mild | broken at
    MILD_LIMIT) get different colours; two values of one class the same (RoPE's 1.09 is not sink's 4.30 red);
    a ratio exactly at a border takes its verdict's colour, as verdicts.verdict reads it."""
    import numpy as np
    from matplotlib.colors import to_rgba

    from posbench.report.figures import VERDICT_COLOURS, verdict_norm
    from posbench.report.analysis.verdicts import MILD_LIMIT, verdict

    for tolerance in (0.05, 0.1):
        cmap, norm = verdict_norm(tolerance)
        paint = lambda v: tuple(cmap(norm(v)))  # noqa: E731
        for border in (1 + tolerance, MILD_LIMIT):
            assert paint(border - 1e-6) != paint(border + 1e-6)
            assert paint(border) == paint(border - 1e-6)
        for a, b in ((0.5, 1 + tolerance - 0.01), (1 + tolerance + 0.01, MILD_LIMIT - 0.01), (1.31, 4.30), (4.30, 5e3)):
            assert paint(a) == paint(b)
        for v in (0.2, 0.96, 1 + tolerance, 1.09, MILD_LIMIT, 1.87, 4.30, 1e4):
            assert np.allclose(paint(v), to_rgba(VERDICT_COLOURS[verdict(v, tolerance)])), v  # the class's own colour
