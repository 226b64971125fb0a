"""posbench/report/analysis/stats.py: how p-values are written."""

from posbench.report.analysis.stats import format_p, p_phrase


def test_p_values_below_what_the_data_could_show_are_written_as_a_bound():
    assert format_p(4.8e-248) == "< 0.001" and format_p(0.0) == "< 0.001" and p_phrase(1e-9) == "< 0.001"
    assert format_p(0.04213) == "0.042" and p_phrase(0.29) == "= 0.29" and p_phrase(0.4812, 3) == "= 0.481"
    assert format_p(float("nan")) == ""
