"""SelfExtend (posbench/evaluation/variants/selfextend.py): a neighbour window of W keys at their own
positions, grouped positions (by G) beyond it; G the smallest that keeps every grouped distance within
train_len (its formula against the reference code: test_extender.py)."""

import pytest

from posbench.core.errors import PosbenchError
from posbench.evaluation.variants import make_variant
from posbench.evaluation.variants.selfextend import SelfExtend


@pytest.mark.parametrize("length, group", [(16, 1), (64, 5), (256, 21)])
def test_the_group_is_the_smallest_that_fits_the_length_in_train_len(length, group):
    v = make_variant("selfextend")
    assert isinstance(v, SelfExtend)
    w, g = v.sizes(length, 16)
    assert (w, g) == (4, group) and (16 - w) * g + w >= length and (g == 1 or (16 - w) * (g - 1) + w < length)


def test_set_sizes_are_kept_and_named():
    v = make_variant("selfextend", {"group": 3, "window": 2})
    assert v.sizes(256, 16) == (2, 3) and v.suffix() == "+selfextendg3w2"
    with pytest.raises(PosbenchError, match=r"variant.group of 'selfextend' must be positive \(and finite\), got 0"):
        make_variant("selfextend", {"group": 0})
