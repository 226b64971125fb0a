"""posbench's sliding protocol (posbench/evaluation/protocols/sliding.py): windows advance by a stride
(L/2 by default, or eval.stride) and score only their last tokens, so every scored token sees at
least L - stride tokens of context."""

import numpy as np
import pytest

from posbench.core.errors import PosbenchError
from posbench.evaluation.protocols.sliding import Sliding
from posbench.evaluation.settings import EvalConfig
from tests.helpers import scored_targets, split_of_documents


@pytest.mark.parametrize("stride", [None, 8])
def test_windows_advance_by_the_stride_and_score_its_last_tokens(stride):
    cfg = EvalConfig(multiples=[1, 2, 4], protocols=["sliding"], stride=stride)
    val = split_of_documents([700, 400, 900])
    handler = Sliding()
    context = handler.prepare(val, cfg, 16, "\0")
    for L in (16, 32, 64):
        plan = handler.plan(L, cfg, 16, len(val), context)
        S = L // 2 if stride is None else min(stride, L)
        assert (plan.scored == S).all() and plan.min_context == L - S
        for unit in np.unique(plan.units):
            assert (np.diff(plan.ends[plan.units == unit]) == S).all()
        assert min(scored_targets(plan, L).values()) >= L - S


def test_a_stride_longer_than_the_shortest_window_is_refused():
    with pytest.raises(PosbenchError, match="eval.stride=20 must be between 1 and the shortest evaluation length 16"):
        Sliding().check(EvalConfig(multiples=[1, 2], protocols=["sliding"], stride=20), 16)
