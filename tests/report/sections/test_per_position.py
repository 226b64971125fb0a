"""The per-position section (posbench/report/sections/per_position.py): loss by position at the longest
length."""

from posbench.report.sections.per_position import FIGURE, PerPosition
from tests.helpers import run_section


def test_the_loss_by_position_figure(sweep_context, tmp_path):
    md, written = run_section(PerPosition, sweep_context, tmp_path)
    assert list(written) == [FIGURE.name] == ["per_position.png"]
    assert (tmp_path / FIGURE.name).read_bytes().startswith(b"\x89PNG") and "The dotted line marks" in md
