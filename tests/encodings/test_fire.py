"""FIRE (posbench/encodings/fire.py): the paper's formula, its normaliser, its initial values."""

import math

import pytest
import torch

from posbench.encodings import ModelShape, build_encoding


def test_fire_matches_the_paper_formula_and_its_normaliser_varies_in_training():
    train_len = 64
    enc = build_encoding("fire", ModelShape(32, 4, 1, train_len))
    layer = enc.layers[0]
    L, c = layer.threshold().item(), layer.c.item()
    assert L == 16
    q, k = torch.arange(train_len), torch.arange(train_len)
    got = enc.bias(q, k, 0)
    for i, j in [(5, 2), (20, 3), (63, 0), (40, 39)]:
        x = math.log(c * (i - j) + 1) / (math.log(c * max(L, i) + 1) + 1e-6)
        expected = layer.mlp(torch.tensor([[x]], dtype=torch.float32))[0]
        assert torch.allclose(got[:, i, j], expected, atol=1e-5)
    # progressive interpolation is at work within the training length: the same distance maps to
    # different inputs for queries past L
    norms = {i: math.log(c * max(L, i) + 1) for i in range(train_len)}
    assert len({round(v, 6) for v in norms.values()}) > train_len // 2


def test_fire_bias_is_normalised_by_the_query_position():
    enc = build_encoding("fire", ModelShape(32, 4, 2, 16))
    b = enc.bias(torch.arange(100), torch.arange(100), 0)
    assert b.shape == (4, 100, 100) and torch.isfinite(b).all()
    # psi(i-j)/psi(max(L,i)) is 1 for j = 0 at every query past L: the same bias there
    assert torch.allclose(b[:, 50, 0], b[:, 90, 0], atol=1e-6)


@pytest.mark.parametrize("train_len", [16, 128, 4096])
def test_fire_parameters_start_where_asked_with_finite_gradients(train_len):
    enc = build_encoding("fire", ModelShape(32, 4, 2, train_len))
    layer = enc.layers[0]
    assert layer.threshold().item() == pytest.approx(train_len / 4)  # the paper: 512 at 2048
    assert layer.c.item() == pytest.approx(0.1) and layer.L_multiplier.item() == 1.0
    enc.bias(torch.arange(200), torch.arange(200), 0).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters())
    assert layer.L_multiplier.grad.abs().item() > 0  # the threshold learns


def test_fire_learns_its_threshold_from_the_queries_below_it():
    """psi(max(i, L)) normalises the distances: L (the threshold, train_len / 4 at first, learned through
    its multiplier) gets a gradient from the queries below it, none from queries past it."""
    from posbench.encodings.fire import Fire

    enc = build_encoding("fire", ModelShape(32, 4, 1, 64))
    assert isinstance(enc, Fire)
    layer = enc.layers[0]
    assert layer.threshold().item() == 16
    enc.bias(torch.arange(8), torch.arange(8), 0).sum().backward()  # queries 0..7, below L = 16
    assert layer.L_multiplier.grad.abs().item() > 0
    layer.L_multiplier.grad = None
    enc.bias(torch.arange(20, 30), torch.arange(20, 30), 0).sum().backward()  # every query past L
    assert layer.L_multiplier.grad is None or layer.L_multiplier.grad.item() == 0
