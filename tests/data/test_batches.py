"""posbench/data/batches.py: a batch depends only on the seed and the step."""

import numpy as np

from posbench.data.batches import sample_batch


def test_batches_depend_only_on_seed_and_step():
    tokens = np.arange(1000, dtype=np.uint8)
    x1, y1 = sample_batch(tokens, 4, 16, seed=3, step=7)
    x2, y2 = sample_batch(tokens, 4, 16, seed=3, step=7)
    x3, _ = sample_batch(tokens, 4, 16, seed=3, step=8)
    assert x1.equal(x2) and y1.equal(y2) and not x1.equal(x3)
    assert y1[:, :-1].equal(x1[:, 1:])  # targets are inputs shifted by one
