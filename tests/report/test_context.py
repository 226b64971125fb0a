"""posbench/report/context.py: what every section reads, computed once: the runs, the records the tables
compare, and the frames several sections share; a folder that makes no report is refused first."""

import pytest

from posbench.core.errors import PosbenchError
from posbench.report.context import ReportContext
from tests.conftest import ENCODINGS


def test_the_sweep_s_context_holds_its_runs_records_and_main_table(sweep_context):
    ctx = sweep_context
    assert isinstance(ctx, ReportContext) and ctx.has_lm and len(ctx.completed) == len(ENCODINGS) * 2
    assert ctx.task_runs.empty and ctx.tuned is None and not ctx.has_budgets
    assert ctx.evals.groupby("protocol")["token_set"].nunique().eq(1).all()  # one token set compared per protocol
    assert ctx.ratio_column == "4x/1x" and set(ctx.table["variant"]) == set(ENCODINGS)
    assert ctx.derived("mine", lambda: [1]) is ctx.derived("mine", lambda: [2])  # a plug-in's frame, made once


def test_a_folder_without_runs_makes_no_report(sweep_context, tmp_path):
    with pytest.raises(PosbenchError, match="no runs \\(metrics.json\\) found below"):
        ReportContext.load(tmp_path, sweep_context.options)
