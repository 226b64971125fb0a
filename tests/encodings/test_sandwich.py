"""Sandwich (posbench/encodings/sandwich.py) against NeMo's implementation."""

import math

import pytest
import torch

from posbench.encodings import ModelShape, build_encoding


def nemo_sandwich(distance: int, head: int, n_heads: int, d: int) -> float:
    """NeMo's SandwichRelativePositionEmbedding for one (distance, head), head counted from 1."""
    total = sum(math.cos(distance / 10000 ** (2 * k / d)) for k in range(1, d // 2 + 1))
    return (total - d / 2) / (head * 8 / n_heads)


@pytest.mark.parametrize("d_model, n_heads", [(32, 4), (64, 2), (128, 8)])
def test_sandwich_matches_nemo(d_model, n_heads):
    enc = build_encoding("sandwich", ModelShape(d_model, n_heads, 2, 16))
    dists = [0, 1, 3, 17, 63, 500]
    b = enc.bias(torch.tensor([600]), torch.tensor([600 - d for d in dists]), 0)[:, 0]  # [H, len(dists)]
    for h in range(n_heads):
        for i, dist in enumerate(dists):
            assert b[h, i].item() == pytest.approx(nemo_sandwich(dist, h + 1, n_heads, d_model // n_heads), abs=1e-4)


def test_the_sandwich_table_is_zero_on_the_diagonal_and_each_head_scales_the_first():
    """b[h, d] = (sum_k cos(d 10000^(-2k/D)) - D/2) / (8 h / H): 0 at distance 0, head h = head 1 / h."""
    from posbench.encodings.sandwich import Sandwich, sandwich_table

    table = sandwich_table(50, 4, 8)
    assert table.shape == (4, 51) and torch.all(table[:, 0] == 0)
    for h in range(4):
        torch.testing.assert_close(table[h], table[0] / (h + 1))
    enc = build_encoding("sandwich", ModelShape(32, 4, 1, 16))
    assert isinstance(enc, Sandwich)
    b = enc.bias(torch.tensor([50]), torch.arange(51), 0)[:, 0]  # distances 50 .. 0
    torch.testing.assert_close(b, table.flip(-1).float())
