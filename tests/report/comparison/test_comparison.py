"""posbench/report/comparison/frames.py and figure.py (``posbench-report --compare / --baseline``): the
paired differences the figure draws are the pairs table's numbers, bad names are one line, and the figure
exists only when asked for."""

import math
from dataclasses import replace

import numpy as np
import pytest

from posbench.core.errors import PosbenchError
from posbench.report.comparison.frames import paired_differences
from posbench.report.records.selection import ComparisonRequest
from posbench.report.comparison.figure import plot_comparison
from posbench.report.context import ReportContext
from posbench.report.comparison.section import DATA, EXTRAPOLATION, FIGURE, ComparisonSection
from posbench.report.analysis.stats import ALPHA, format_p
from posbench.report.analysis.tables import PANEL_KEYS, comparisons
from tests.helpers import run_section


def test_the_figure_s_differences_are_the_pairs_table_s_numbers(sweep_context):
    """Against the best row of a column, the paired difference of log-perplexity is log(ppl_a / ppl_best) of
    ``pairs.csv`` and its test the same p-value; the interval excludes 0 exactly where that t test rejects."""
    pairs = comparisons(sweep_context.table)
    checked = 0
    for (protocol, model, train_len, best), group in pairs.groupby([*PANEL_KEYS, "b (best)"]):
        frame = paired_differences(sweep_context.evals, ComparisonRequest(baseline=best), sweep_context.token_sets)
        for _, p in group.iterrows():
            (row,) = frame[(frame["protocol"] == protocol) & (frame["model"] == model) & (frame["train_len"] == train_len)
                           & (frame["a"] == p["a"]) & (frame["multiple"] == p["multiple"])].itertuples()
            assert row.b == best and row.seeds == p["seeds"]
            assert row.diff == pytest.approx(math.log(p["ppl_ratio_a_over_b"]), abs=1e-12)
            assert format_p(row.p_value, 3) == p["p_value"] and row.test == p["test"]
            assert row.lo <= row.diff <= row.hi
            if row.test.startswith("t over seeds"):  # the interval and the test are one estimate
                assert (row.lo > 0 or row.hi < 0) == (row.p_value < ALPHA)
            checked += 1
    assert checked > 10


def test_compare_draws_the_named_rows_against_the_first_and_baseline_every_row(sweep_context, tmp_path):
    named = paired_differences(sweep_context.evals, ComparisonRequest(("rope", "alibi", "nope")), sweep_context.token_sets)
    assert set(zip(named["a"], named["b"])) == {("alibi", "rope"), ("nope", "rope")}
    every = paired_differences(sweep_context.evals, ComparisonRequest(baseline="nope"), sweep_context.token_sets)
    assert set(every["a"]) == set(sweep_context.evals["variant"]) - {"nope"} and set(every["b"]) == {"nope"}
    assert sorted(every["multiple"].unique()) == [1.0, 2.0, 4.0]  # every length, on one figure
    plot_comparison(named, tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes().startswith(b"\x89PNG")


def test_a_bad_row_name_is_one_line_with_the_valid_ones():
    with pytest.raises(PosbenchError) as e:
        ComparisonRequest(("rope", "alibbi")).check(["rope", "alibi", "nope"])
    assert str(e.value) == "--compare: no row 'alibbi' in this report (did you mean alibi?); valid: alibi, nope, rope"
    with pytest.raises(PosbenchError, match=r"^--baseline: no row 'ropee' .*did you mean rope or nope"):
        ComparisonRequest(baseline="ropee").check(["rope", "alibi", "nope"])
    with pytest.raises(PosbenchError, match="names one row"):
        ComparisonRequest(("rope",)).check(["rope", "alibi"])


def test_the_section_is_written_only_when_asked(sweep, sweep_context, sweep_report, tmp_path):
    assert not ComparisonSection().applies(sweep_context)
    assert not (sweep_report / FIGURE.name).exists() and "## Comparison" not in (sweep_report / "report.md").read_text()
    runs, _, _ = sweep
    ctx = ReportContext.load(runs, replace(sweep_context.options, comparison=ComparisonRequest(baseline="rope")))
    assert ComparisonSection().applies(ctx)
    md, written = run_section(ComparisonSection, ctx, tmp_path)
    assert list(written) == [DATA.name, EXTRAPOLATION.name, FIGURE.name]
    assert f"![{FIGURE.description}]({FIGURE.name})" in md and "Does the row extrapolate better" in md
    assert "95% interval over text and seeds" in md and np.isfinite(ctx.derived("comparison", None)["lo"]).all()
