"""posbench/report/stats.py: the t interval, the paired test and how p-values are written."""

import math

import numpy as np
import pytest

from posbench.report.stats import ci95_halfwidth, paired_pvalue


def test_ci95_halfwidth_known_values():
    assert ci95_halfwidth([1.0, 2.0, 3.0]) == pytest.approx(4.302653 * 1.0 / math.sqrt(3), rel=1e-6)  # t(0.975, 2)
    assert math.isnan(ci95_halfwidth([5.0]))


def test_paired_test_uses_the_pairing():
    a = np.array([10.0, 20.0, 30.0, 40.0])
    b = a * np.array([1.05, 1.06, 1.05, 1.06])  # always ~5% worse: unpaired it looks like noise, paired it is clear
    assert paired_pvalue(a, b) < 0.001
    assert paired_pvalue(a, a) == 1.0
    assert math.isnan(paired_pvalue([1.0], [2.0]))


def test_p_values_below_what_the_data_could_show_are_written_as_a_bound():
    from posbench.report.stats import format_p, p_phrase

    assert format_p(4.8e-248) == "< 0.001" and format_p(0.0) == "< 0.001" and p_phrase(1e-9) == "< 0.001"
    assert format_p(0.04213) == "0.042" and p_phrase(0.29) == "= 0.29" and p_phrase(0.4812, 3) == "= 0.481"
    assert format_p(float("nan")) == ""
