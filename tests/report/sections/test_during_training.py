"""The during-training section (posbench/report/sections/during_training.py): 1x perplexity and the
longest ratio at each evaluation during training (``eval.during_training``)."""

import pandas as pd

from posbench.report.sections.during_training import DuringTraining
from tests.helpers import run_section


def test_the_probes_of_the_sweep_are_a_table_and_a_figure(sweep_context, tmp_path):
    assert DuringTraining().applies(sweep_context)  # the shared sweep probes at 0.5 and 1.0 of its budget
    md, written = run_section(DuringTraining, sweep_context, tmp_path)
    assert sorted(written) == ["during_training.csv", "during_training.png"]
    curves = pd.read_csv(tmp_path / "during_training.csv")
    assert not curves.empty and "Evaluated during training" in md
