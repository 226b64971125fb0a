"""ALiBi (posbench/encodings/alibi.py): the paper's slopes and a bias that decreases with distance."""

import torch

from posbench.encodings import ModelShape, build_encoding
from posbench.encodings.alibi import alibi_slopes


def test_alibi_slopes_match_the_paper():
    assert torch.allclose(alibi_slopes(8), torch.tensor([2.0 ** -(i + 1) for i in range(8)]))
    # 6 heads: the 4-head slopes, then every other slope of the 8-head sequence
    expected = [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]
    assert torch.allclose(alibi_slopes(6), torch.tensor(expected))
    assert len(alibi_slopes(12)) == 12


def test_alibi_bias_is_zero_on_diagonal_and_decreases_with_distance():
    enc = build_encoding("alibi", ModelShape(32, 4, 1, 16))
    b = enc.bias(torch.tensor([20]), torch.arange(20, 10, -1), 0)[:, 0]  # [H, distances 0..9]
    assert torch.all(b[:, 0] == 0)
    assert torch.all(b[:, 1:] < b[:, :-1])
