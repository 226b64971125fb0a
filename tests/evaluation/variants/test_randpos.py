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


def test_a_model_trained_on_real_positions_is_scored_on_sorted_reals_from_the_same_range():
    """Random Float Sampling (train.random_positions_kind=float): the row draws reals from [0, M) too,
    and records that it does; the integer row keeps the record it always had."""
    from posbench.evaluation.variants import rows
    from posbench.evaluation.settings import EvalConfig

    enc = build_encoding("rope", ModelShape(32, 4, 1, 16, max_position=64, continuous_positions=True))
    (row,) = [r for r in rows(enc, EvalConfig(multiples=[1, 2], variants=[])) if r.name == "rope+randpos"]
    p = row.positions(32, 64, 3)
    assert p.dtype == torch.float32 and torch.all(p[1:] > p[:-1]) and p.min() >= 0 and p.max() < 64
    assert not torch.equal(p, p.round()) and torch.equal(p, row.positions(32, 64, 3))
    assert row.record()["variants"] == [{"variant": "randpos", "continuous": True}]
    assert make_variant("randpos").record() == {"variant": "randpos"}
    assert make_variant("randpos").positions(32, 64, 3).dtype == torch.int64
