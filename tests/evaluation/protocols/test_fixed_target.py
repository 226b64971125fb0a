"""The fixed-target protocol (posbench/evaluation/protocols/fixed_target.py): the same final tokens of each
validation document, scored with the L - m tokens before them as context."""

import numpy as np
import pytest

from posbench.evaluation.protocols.fixed_target import FixedTarget
from posbench.evaluation.settings import EvalConfig
from tests.helpers import scored_targets, split_of_documents


def test_the_targets_are_each_document_s_last_tokens_at_every_length():
    cfg = EvalConfig(multiples=[1, 2, 4], protocols=["fixed_target"], target_tokens=4, target_docs=8)
    val = split_of_documents([700, 400, 900])
    handler = FixedTarget()
    ends = handler.prepare(val, cfg, 16, "\0")
    assert all(val[e + 1] == 0 for e in ends)  # each target block ends its document
    sets = []
    for L in (16, 32, 64):
        plan = handler.plan(L, cfg, 16, len(val), ends)
        assert (plan.scored == 4).all() and plan.min_context == L - 4 and list(plan.units) == list(range(len(ends)))
        sets.append(set(scored_targets(plan, L)))
    assert sets[0] == sets[1] == sets[2] == {int(e) - k for e in ends for k in range(4)}
    assert handler.token_set(cfg, 16, len(val)).startswith("doc-ends[") and "last 4 of 8 docs" in handler.token_set(cfg, 16, len(val))
    with pytest.raises(ValueError, match="needs the document ends"):
        handler.plan(16, cfg, 16, len(val), None)
    assert np.asarray(ends).dtype.kind in "iu"
