"""posbench/data/batches.py: a batch depends only on the seed and the step."""

import numpy as np

import pytest

from posbench.core.errors import PosbenchError
from posbench.data.batches import sample_batch, stream_batch


def test_batches_depend_only_on_seed_and_step():
    tokens = np.arange(1000, dtype=np.uint8)
    x1, y1 = sample_batch(tokens, 4, 16, seed=3, step=7)
    x2, y2 = sample_batch(tokens, 4, 16, seed=3, step=7)
    x3, _ = sample_batch(tokens, 4, 16, seed=3, step=8)
    assert x1.equal(x2) and y1.equal(y2) and not x1.equal(x3)
    assert y1[:, :-1].equal(x1[:, 1:])  # targets are inputs shifted by one


def test_a_stream_continues_each_row_for_its_segments_then_draws_a_new_stretch():
    tokens = np.arange(100_000, dtype=np.int64)  # a token's value is its index
    x = [stream_batch(tokens, 4, 16, segments=3, seed=5, step=s)[0] for s in range(6)]
    for s in (1, 2, 4, 5):  # row b of step s reads on where row b of step s - 1 stopped
        assert x[s][:, 0].equal(x[s - 1][:, -1] + 1)
    assert not x[3][:, 0].equal(x[2][:, -1] + 1)  # step 3 starts new stretches
    again, y = stream_batch(tokens, 4, 16, segments=3, seed=5, step=4)
    assert again.equal(x[4]) and y[:, :-1].equal(again[:, 1:])  # (seed, step) alone: resumable


def test_a_stream_longer_than_the_split_is_one_line():
    with pytest.raises(PosbenchError, match="too few for stretches of 4 windows"):
        stream_batch(np.arange(60, dtype=np.int64), 2, 16, segments=4, seed=0, step=0)
