"""The glance section (posbench/report/sections/glance.py): the ratio heatmap."""

import numpy as np
from matplotlib.colors import to_rgba

from posbench.report.analysis.verdicts import MILD_LIMIT, verdict
from posbench.report.sections.glance import FIGURE, VERDICT_COLOURS, Glance, plot_ratio_heatmap, verdict_norm
from tests.helpers import run_section


def test_the_glance_draws_the_ratio_at_the_longest_multiple(sweep_context, tmp_path):
    assert Glance().applies(sweep_context)
    md, written = run_section(Glance, sweep_context, tmp_path)
    assert list(written) == [FIGURE.name] == ["ratio_heatmap.png"]
    assert (tmp_path / FIGURE.name).read_bytes().startswith(b"\x89PNG") and "Each cell is `4x/1x`" in md
    assert "green flat (at most 1.05)" in md and "red broken (above 1.3)" in md and "**undecided**" in md  # what colours mean


def test_the_heatmap_names_the_ratio_it_draws(sweep_context, tmp_path):
    assert plot_ratio_heatmap(sweep_context.table, 0.05, tmp_path / "heat.png") == "4x/1x"
    assert (tmp_path / "heat.png").read_bytes().startswith(b"\x89PNG")


def test_the_heatmap_colours_are_anchored_at_the_verdict_borders_not_stretched_to_the_data():
    """A value just below and just above each border (flat | mild at 1 + tolerance, mild | broken at
    MILD_LIMIT) get different colours; two values of one class the same (RoPE's 1.09 is not sink's 4.30 red);
    a ratio exactly at a border takes its verdict's colour, as verdicts.verdict reads it."""
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


def test_the_heatmap_has_a_column_per_panel_the_table_has_and_no_empty_one(monkeypatch, tmp_path):
    """tiny at 64 beside small at 32 and 64: three columns, not the product of sizes and lengths (the map's
    heatmap had 9 of 16 columns empty)."""
    import pandas as pd

    from posbench.report.sections import glance

    rows = [{"protocol": "nonoverlapping", "variant": v, "model": m, "train_len": L, "4x/1x": 1.0 + i / 10,
             "verdict": "flat"} for i, (m, L) in enumerate([("tiny", 64), ("small", 32), ("small", 64)])
            for v in ("rope", "alibi")]
    shown = {}
    monkeypatch.setattr(glance, "save", lambda fig, path: shown.setdefault("labels", [t.get_text() for t in fig.axes[0].get_xticklabels()]))
    glance.plot_ratio_heatmap(pd.DataFrame(rows), 0.05, tmp_path / "heat.png")
    assert sorted(shown["labels"]) == sorted(["nonoverlapping\nsmall L=32", "nonoverlapping\nsmall L=64",
                                              "nonoverlapping\ntiny L=64"])
