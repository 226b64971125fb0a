"""posbench/attention/options.py: options no kernel honours are refused when made (one line naming
the option and what is valid), where they used to be accepted and dropped in the forward."""

from functools import partial

import pytest

from posbench.attention.kernels import Window
from posbench.attention.options import NOT_WITH_EXTENDER, AttentionOptions
from posbench.attention.temperatures import logn_scale
from posbench.core.errors import PosbenchError
from posbench.evaluation.diagnostics import AttentionRecorder


def extender(q, k, v, enc, positions, options):
    return v


BESIDE_AN_EXTENDER = {"block": 8, "window": Window("sliding", 8), "query_scale": partial(logn_scale, train_len=16),
                      "recorder": AttentionRecorder(1, 1)}


@pytest.mark.parametrize("key", sorted(NOT_WITH_EXTENDER))
def test_an_extender_beside_what_its_kernel_lacks_is_refused(key):
    with pytest.raises(PosbenchError, match=f"honours no .*\\({key}=\\); valid beside it: kernel, logit_scale, rope"):
        AttentionOptions(attention=extender, **{key: BESIDE_AN_EXTENDER[key]})
    with pytest.raises(PosbenchError, match=key):  # made by a row's variants one at a time: replace checks too
        AttentionOptions(**{key: BESIDE_AN_EXTENDER[key]}).replace(attention=extender)


@pytest.mark.parametrize("changes, message", [
    ({"kernel": "fast"}, "unknown attention kernel 'fast'; valid: auto, flex, chunked"),
    ({"block": 0}, "positive integer block, got 0"), ({"block": 2.5}, "got 2.5"), ({"block": True}, "got True"),
    ({"logit_scale": 0.0}, "must be positive, got 0.0"), ({"logit_scale": float("nan")}, "got nan"),
])
def test_bad_values_are_refused(changes, message):
    with pytest.raises(PosbenchError, match=message):
        AttentionOptions(**changes)


def test_what_the_kernels_honour_is_accepted():
    AttentionOptions(attention=extender, kernel="flex", logit_scale=0.5, rope=("yarn", 4.0))
    AttentionOptions(block=8, window=Window("chunked", 4), query_scale=partial(logn_scale, train_len=16),
                     recorder=AttentionRecorder(1, 1), kernel="chunked", logit_scale=2.0)
