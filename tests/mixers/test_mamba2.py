"""Mamba-2's SSD layer (posbench/mixers/mamba2.py): the paper's chunked scan equals the recurrence
h_t = exp(dt A) h_{t-1} + dt B_t x_t, y_t = C_t h_t + D x_t to float64 rounding, at lengths that are
and are not multiples of the chunk; the layer is causal; training runs no Python loop at all."""

import pytest
import torch

from posbench.mixers.base import CausalConv
from posbench.mixers.mamba2 import segsum, ssd_chunked, ssd_recurrent
from tests.mixers.helpers import CountingLoops, assert_causal, layer, max_diff

TOL = 1e-12  # measured: at most 1e-14 on the kernels and the layer


def inputs(L, b=2, h=3, p=4, n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(b, L, h, p, generator=g, dtype=torch.float64)
    A = -torch.rand(b, L, h, generator=g, dtype=torch.float64)
    B = torch.randn(b, L, n, generator=g, dtype=torch.float64)
    C = torch.randn(b, L, n, generator=g, dtype=torch.float64)
    return X, A, B, C


@pytest.mark.parametrize("L", [1, 5, 16, 29, 48, 70])
@pytest.mark.parametrize("chunk", [4, 16])
def test_the_chunked_scan_equals_the_recurrence(L, chunk):
    args = inputs(L, seed=L)
    assert max_diff(ssd_chunked(*args, chunk=chunk), ssd_recurrent(*args)) < TOL


def test_segsum_is_the_sum_between_two_positions():
    x = torch.randn(6, dtype=torch.float64)
    s = segsum(x)
    for i in range(6):
        for j in range(6):
            assert (s[i, j] == float("-inf")) if j > i else abs(s[i, j] - x[j + 1:i + 1].sum()) < 1e-12


@pytest.mark.parametrize("L", [3, 37, 64])
def test_the_layer_chunked_equals_the_layer_step_by_step(L):
    mixer = layer("mamba2", {"chunk": 16})
    x = torch.randn(2, L, 16, dtype=torch.float64)
    with torch.no_grad():
        assert max_diff(mixer(x), mixer(x, recurrent=True)) < TOL


def test_the_layer_is_causal():
    assert_causal(layer("mamba2", {"chunk": 8}))


def test_the_chunked_scan_has_no_loop():
    args = inputs(64)
    with CountingLoops(ssd_chunked) as short:
        ssd_chunked(*args, chunk=16)
    args = inputs(256)
    with CountingLoops(ssd_chunked) as long:
        ssd_chunked(*args, chunk=16)
    assert long.lines == short.lines  # 4x the tokens and chunks: the same Python lines run


def test_gradients_reach_every_parameter():
    mixer = layer("mamba2").float()
    mixer(torch.randn(2, 20, 16)).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in mixer.parameters())


def test_the_short_convolution_is_causal_and_depthwise():
    conv = CausalConv(3, 4, bias=False).double()
    x = torch.randn(1, 10, 3, dtype=torch.float64)
    w = conv.conv.weight[:, 0]  # [channels, taps]
    want = torch.stack([sum(w[:, i] * x[0, t - 3 + i] for i in range(4) if t - 3 + i >= 0) for t in range(10)])
    assert max_diff(conv(x)[0], want) < 1e-12


@pytest.mark.parametrize("L", [5, 29, 48])
def test_the_chunked_scan_from_a_state_equals_the_recurrence_continued_from_it(L):
    """The recurrence runs 11 tokens, then both forms continue from its state: the same outputs and final state."""
    X, A, B, C = inputs(11 + L, seed=L)
    _, h = ssd_recurrent(X[:, :11], A[:, :11], B[:, :11], C[:, :11], output_final_state=True)
    whole, h_whole = ssd_recurrent(X, A, B, C, output_final_state=True)
    rest = (X[:, 11:], A[:, 11:], B[:, 11:], C[:, 11:])
    Y, h_end = ssd_chunked(*rest, chunk=16, initial_state=h, output_final_state=True)
    Y_rec, h_rec = ssd_recurrent(*rest, initial_state=h, output_final_state=True)
    assert h.abs().max() > 0.1  # a state that matters
    assert max_diff(Y, Y_rec) < TOL and max_diff(h_end, h_rec) < TOL
    assert max_diff(Y, whole[:, 11:]) < TOL and max_diff(h_end, h_whole) < TOL
