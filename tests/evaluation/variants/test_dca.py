"""Dual chunk attention (posbench/evaluation/variants/dca.py): chunks of chunk_size - local_window tokens,
and past the training length the logits scaled by mscale squared (its formula against the reference
code: test_extender.py)."""

import math

import pytest

from posbench.core.errors import PosbenchError
from posbench.evaluation.variants import make_variant
from posbench.evaluation.variants.dca import DualChunkAttention


def test_the_chunks_default_to_three_quarters_of_train_len_with_an_eighth_local():
    v = make_variant("dca")
    assert isinstance(v, DualChunkAttention) and v.sizes(64) == (48, 8) and v.suffix() == "+dca"
    assert make_variant("dca", {"chunk_size": 20, "local_window": 0, "mscale": False}).suffix() == "+dcac20l0-nomscale"
    with pytest.raises(PosbenchError, match="dca needs chunk_size >= 2 and 0 <= local_window < chunk_size"):
        make_variant("dca", {"chunk_size": 4, "local_window": 4})


def test_logits_past_train_len_are_scaled_by_mscale_squared():
    v = make_variant("dca")
    assert v.logit_factor(64, 64) == 1.0 and v.logit_factor(32, 64) == 1.0
    assert v.logit_factor(256, 64) == pytest.approx((0.05 * math.log(4) + 1) ** 2)
    assert make_variant("dca", {"mscale": False}).logit_factor(256, 64) == 1.0
