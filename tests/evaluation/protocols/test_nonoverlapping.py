"""The nonoverlapping protocol (posbench/evaluation/protocols/nonoverlapping.py): consecutive windows tile
each scored segment and score every token, the first ones with little context."""

import numpy as np

from posbench.evaluation.protocols.nonoverlapping import NonOverlapping
from posbench.evaluation.settings import EvalConfig
from tests.helpers import scored_targets, split_of_documents


def test_windows_tile_each_segment_and_score_every_token():
    cfg = EvalConfig(multiples=[1, 2, 4], protocols=["nonoverlapping"])
    val = split_of_documents([700, 400, 900])
    handler = NonOverlapping()
    assert not handler.needs_history
    context = handler.prepare(val, cfg, 16, "\0")
    for L in (16, 32, 64):
        plan = handler.plan(L, cfg, 16, len(val), context)
        assert (plan.scored == L).all() and plan.min_context == 0
        for unit in np.unique(plan.units):
            ends = plan.ends[plan.units == unit]
            assert (np.diff(ends) == L).all()  # side by side: no overlap, no gap
        assert sorted(scored_targets(plan, L)) == sorted(scored_targets(handler.plan(16, cfg, 16, len(val), context), 16))
