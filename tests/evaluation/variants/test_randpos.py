"""The randomized-positions row (posbench/evaluation/variants/randpos.py): a model trained on positions
drawn from [0, max_position) is evaluated on such draws, up to lengths of max_position."""

import torch

from posbench.encodings import ModelShape, build_encoding
from posbench.evaluation.variants import make_variant
from posbench.evaluation.variants.randpos import RandomizedPositions


def test_it_applies_to_models_trained_on_randomized_positions_and_draws_sorted_reproducible_positions():
    v = make_variant("randpos")
    assert isinstance(v, RandomizedPositions)
    assert v.applies_to(build_encoding("learned", ModelShape(32, 4, 1, 16, max_position=64)))
    assert not v.applies_to(build_encoding("learned", ModelShape(32, 4, 1, 16)))
    p = v.positions(32, 64, 0)
    assert len(p) == 32 and torch.all(p[1:] > p[:-1]) and p.max() < 64 and torch.equal(p, v.positions(32, 64, 0))
    assert v.undefined_reason(64, 64) is None
    assert v.undefined_reason(128, 64) == "randomized positions are drawn from [0, 64), fewer than 128"
