"""The budget section (posbench/report/sections/budget.py) in the shared sweep's report."""

import pandas as pd


def test_report_shows_the_budget(sweep_report):
    md = (sweep_report / "report.md").read_text()
    assert "**Training budget:** 20 optimiser steps per run" in md
    assert "## Training budget" in md and "during_training.png" in md
    conv = pd.read_csv(sweep_report / "convergence.csv")
    assert len(conv) == 10 and set(conv["from_step"]) == {10} and conv["still_improving"].all()
    curves = pd.read_csv(sweep_report / "during_training.csv")
    assert set(curves["step"]) == {10, 20} and (curves["seeds"] == 2).all()


def test_the_budget_section_writes_each_run_s_convergence(sweep_context, tmp_path):
    import pandas as pd

    from posbench.report.sections.budget import Budget
    from tests.helpers import run_section

    md, written = run_section(Budget, sweep_context, tmp_path)
    assert list(written) == ["convergence.csv"] and md.startswith("## Training budget")
    assert len(pd.read_csv(tmp_path / "convergence.csv")) == 10  # every run of the sweep
