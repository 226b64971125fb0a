"""ReRoPE (posbench/evaluation/variants/rerope.py): distances at or past the window w are clipped to w,
and queries past the training length are scaled by log-n (its formula against the reference code:
test_extender.py)."""

import math

import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.evaluation.variants import make_variant
from posbench.evaluation.variants.rerope import ReRoPE


def test_the_window_defaults_to_a_quarter_of_train_len_and_names_the_row():
    v = make_variant("rerope")
    assert isinstance(v, ReRoPE) and v.clip_distance(64) == 16 and v.suffix() == "+rerope"
    assert make_variant("rerope", {"window": 8, "logn": False}).suffix() == "+reropew8-nologn"
    with pytest.raises(PosbenchError, match=r"variant.window of 'rerope' must be positive \(and finite\), got 0"):
        make_variant("rerope", {"window": 0})


def test_queries_past_train_len_are_scaled_by_log_n():
    pos = torch.arange(64)
    scale = make_variant("rerope").query_scale(pos, 16)
    assert torch.all(scale[:16] == 1)
    assert scale[63].item() == pytest.approx(math.log(64) / math.log(16))
    assert make_variant("rerope", {"logn": False}).query_scale(pos, 16) is None
