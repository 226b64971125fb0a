"""T5's relative buckets (posbench/encodings/t5.py): known values, and every bucket used in evaluation
is trained."""

import pytest
import torch

from posbench.encodings import ModelShape, build_encoding


def test_t5_every_bucket_used_in_evaluation_is_trained():
    from posbench.core.errors import PosbenchError
    from posbench.encodings.t5 import relative_position_bucket

    for train_len in (16, 64, 128):
        enc = build_encoding("t5", ModelShape(32, 4, 2, train_len))
        trained = set(relative_position_bucket(-torch.arange(train_len), True, enc.num_buckets, enc.max_distance).tolist())
        evaluated = set(relative_position_bucket(-torch.arange(16 * train_len), True, enc.num_buckets, enc.max_distance).tolist())
        assert evaluated <= trained == set(range(enc.num_buckets))
    with pytest.raises(PosbenchError, match="reach only buckets 0..26 of 32"):
        build_encoding("t5", ModelShape(32, 4, 2, 64), {"max_distance": 128})


def test_t5_buckets_known_values():
    from posbench.encodings.t5 import relative_position_bucket as bucket

    rel = torch.tensor([0, -1, -15, -16, -20, -32, -64, -127, -128, -1000, 5])
    assert bucket(rel, causal=True).tolist() == [0, 1, 15, 16, 17, 21, 26, 31, 31, 31, 0]
    rel = torch.tensor([0, -3, 3, -8, -16, 16, -128, 200])
    assert bucket(rel, causal=False).tolist() == [0, 3, 19, 8, 10, 26, 15, 31]
