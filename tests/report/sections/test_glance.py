"""The glance section (posbench/report/sections/glance.py): the ratio heatmap."""

from posbench.report.sections.glance import FIGURE, Glance
from tests.helpers import run_section


def test_the_glance_draws_the_ratio_at_the_longest_multiple(sweep_context, tmp_path):
    assert Glance().applies(sweep_context)
    md, written = run_section(Glance, sweep_context, tmp_path)
    assert list(written) == [FIGURE.name] == ["ratio_heatmap.png"]
    assert (tmp_path / FIGURE.name).read_bytes().startswith(b"\x89PNG") and "Each cell is `4x/1x`" in md
    assert "green flat (at most 1.05)" in md and "red broken (above 1.3)" in md and "**undecided**" in md  # what colours mean
