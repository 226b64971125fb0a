"""The training-curves section (posbench/report/sections/training_curves.py)."""

from posbench.report.sections.training_curves import FIGURE, TrainingCurves
from tests.helpers import run_section


def test_the_training_curves_figure(sweep_context, tmp_path):
    md, written = run_section(TrainingCurves, sweep_context, tmp_path)
    assert list(written) == [FIGURE.name] == ["training_curves.png"] and md.startswith("## Training curves")
    assert (tmp_path / FIGURE.name).read_bytes().startswith(b"\x89PNG")
