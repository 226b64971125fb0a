"""Press et al.'s sliding protocol (posbench/evaluation/protocols/press_sliding.py): windows advance by
eval.press_stride tokens (1 in the paper) and score only those, so every scored token sees at least
L - stride tokens of context."""

import numpy as np

from posbench.evaluation.protocols.press_sliding import PressSliding
from posbench.evaluation.settings import EvalConfig
from tests.helpers import split_of_documents


def test_windows_advance_by_the_press_stride_and_score_that_many_tokens():
    cfg = EvalConfig(multiples=[1, 2], protocols=["press_sliding"], press_stride=4)
    val = split_of_documents([700, 400, 900])
    handler = PressSliding()
    assert handler.needs_history
    plan = handler.plan(32, cfg, 16, len(val), handler.prepare(val, cfg, 16, "\0"))
    assert (plan.scored == 4).all() and plan.min_context == 28
    for unit in np.unique(plan.units):
        assert (np.diff(plan.ends[plan.units == unit]) == 4).all()
