"""posbench/report/analysis/verdicts.py: the verdict classes of a ratio to 1x and of a row's use of context past
train_len, with their thresholds."""

import math

import pytest

from posbench.report.analysis.verdicts import (
    FAR_UNDECIDED,
    LOCAL,
    MILD_LIMIT,
    USES_FAR,
    far_context_class,
    interval_verdict,
    qualified_verdict,
    verdict,
)


@pytest.mark.parametrize("ratio, word", [(0.9, "flat"), (1.05, "flat"), (1.06, "mild"), (MILD_LIMIT, "mild"),
                                         (1.31, "broken"), (math.nan, "n/a")])
def test_a_ratio_s_class_at_a_tolerance_of_5_percent(ratio, word):
    assert verdict(ratio, 0.05) == word


def test_far_context_use_needs_the_whole_interval_past_one_percent():
    assert far_context_class(1.02, 1.2) == USES_FAR and far_context_class(0.95, 1.005) == LOCAL
    assert far_context_class(1.0, 1.05) == FAR_UNDECIDED and far_context_class(math.nan, 1.0) == ""
    assert qualified_verdict("flat", LOCAL) == "flat, local (gains nothing past train_len)"
    assert qualified_verdict("flat", USES_FAR) == "flat, uses far context"
    assert qualified_verdict("broken", USES_FAR) == "broken" and qualified_verdict("flat", "") == "flat"


def test_an_interval_straddling_a_border_is_undecided():
    assert interval_verdict(1.02, 1.1, 1.06, 0.05) == "undecided"
    assert interval_verdict(math.nan, math.nan, 1.2, 0.05) == "mild, no interval"
