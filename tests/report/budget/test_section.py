"""The budget's sections (posbench/report/budget/section.py): the budget section, each run's convergence
and the spread warning, in the shared sweep's report; the budget-axis section, each row's verdict at every
training budget, its trend, and its distance from the fitted floor."""

import math
from types import SimpleNamespace

import pandas as pd

from posbench.report.analysis import sweep
from posbench.report.budget.section import Budget, BudgetAxis, _cell
from tests.helpers import records, run_section


def test_report_shows_the_budget(sweep_report):
    md = (sweep_report / "report.md").read_text()
    assert "**Training budget:** 20 optimiser steps per run" in md
    assert "## Training budget" in md and "during_training.png" in md
    conv = pd.read_csv(sweep_report / "convergence.csv")
    assert len(conv) == 10 and set(conv["from_step"]) == {10} and conv["still_improving"].all()
    curves = pd.read_csv(sweep_report / "during_training.csv")
    assert set(curves["step"]) == {10, 20} and (curves["seeds"] == 2).all()


def test_the_budget_section_shows_each_run_s_convergence_and_the_convergence_section_keeps_it(sweep_context, tmp_path):
    from posbench.report.sections.convergence import Convergence

    md, written = run_section(Budget, sweep_context, tmp_path)
    assert written == {} and md.startswith("## Training budget")
    md, written = run_section(Convergence, sweep_context, tmp_path)
    assert list(written) == ["convergence.csv"] and not md.strip()
    assert len(pd.read_csv(tmp_path / "convergence.csv")) == 10  # every run of the sweep


def test_every_budget_of_every_row_with_its_interval(sweep_context, tmp_path):
    assert not BudgetAxis().applies(sweep_context)  # one budget
    assert _cell({"1x": 5.0, "1x_lo": 4.5, "1x_hi": 5.5}, "1x") == "5.00 [4.50, 5.50]"
    assert _cell({"1x": math.nan}, "1x") == "n/e"
    evals = records({("a", 600): (6.0, 9.0), ("a", 1200): (5.0, 5.1), ("b", 600): (7.0, 7.0), ("b", 1200): (6.5, 6.4)})
    table = sweep.budget_table(evals, 0.05)
    changes = sweep.paired_changes(evals)
    ctx = SimpleNamespace(has_lm=True, has_budgets=True, ratio_column="2x/1x", budget_table=table,
                          budget_trends=sweep.trends(table, "2x/1x", changes), budget_changes=changes)
    assert BudgetAxis().applies(ctx)
    md, written = run_section(BudgetAxis, ctx, tmp_path)
    assert sorted(written) == ["budget_trends.csv", "budgets.csv", "budgets.png"]
    assert md.startswith("## Verdicts by training budget") and "| a " in md and "moving: broken at 600 to flat at 1200" in md
    assert "change per doubling" in md and "x0.68" in md  # a's 2x/1x: 1.5 at 600 to 1.02 at 1200
    assert "settled" not in md  # the retired word
    assert "window / full" not in md  # no window control among the rows: neither the column nor its words
    with_control = table.assign(far_gain=1.2, far_gain_lo=1.1, far_gain_hi=1.3)
    md, _ = run_section(BudgetAxis, SimpleNamespace(**{**vars(ctx), "budget_table": with_control}), tmp_path)
    assert "| window / full" in md and "1.200 [1.100, 1.300]" in md
