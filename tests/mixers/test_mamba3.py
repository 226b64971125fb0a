"""Mamba-3's SISO layer (posbench/mixers/mamba3.py): the chunked form (an SSD with a per-token input scale
and a diagonal correction) equals the step-by-step recurrence h_t = alpha_t h_{t-1} + beta_t B_{t-1} x_{t-1}
+ gamma_t B_t x_t on rotated B, C to float64 rounding, on lengths on and off the chunk and from a passed
state; lambda = 1 without rotation is Mamba-2's recurrence; the rotated-B, C form is a state rotated by
the data-dependent angle each step (the complex SSM); values worked by hand for one and two tokens; the
layer is causal; the chunked form has no Python loop."""

import math

import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.mixers import build_mixer
from posbench.mixers.mamba2 import ssd_recurrent
from posbench.mixers.mamba3 import heavy_tail, mamba3_chunked, mamba3_recurrent, rotate_pairs
from tests.mixers.helpers import SHAPE, CountingLoops, assert_causal, layer, max_diff

TOL = 1e-12


def inputs(L, b=2, h=3, p=4, n=6, angles=2, seed=0):
    g = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)
    x, B, C = rand(b, L, h, p), rand(b, L, h, n), rand(b, L, h, n)
    dt = torch.nn.functional.softplus(rand(b, L, h))
    adt = -torch.rand(b, L, h, generator=g, dtype=torch.float64) * dt
    lam = torch.rand(b, L, h, generator=g, dtype=torch.float64)
    theta = math.pi * torch.tanh(rand(b, L, 1, angles)) * dt[..., None]
    return x, dt, adt, lam, B, C, theta


@pytest.mark.parametrize("L", [1, 5, 16, 29, 48, 70])
@pytest.mark.parametrize("chunk", [4, 16])
def test_the_chunked_form_equals_the_recurrence(L, chunk):
    args = inputs(L, seed=L)
    y, state = mamba3_chunked(*args, chunk=chunk, output_final_state=True)
    y_rec, state_rec = mamba3_recurrent(*args, output_final_state=True)
    assert max_diff(y, y_rec) < TOL and all(max_diff(s, t) < TOL for s, t in zip(state, state_rec))


@pytest.mark.parametrize("L", [5, 29, 48])
def test_the_chunked_form_from_a_state_equals_the_recurrence_continued_from_it(L):
    args = inputs(11 + L, seed=L)
    first, rest = [t[:, :11] for t in args], [t[:, 11:] for t in args]
    _, state = mamba3_recurrent(*first, output_final_state=True)
    whole, end_whole = mamba3_recurrent(*args, output_final_state=True)
    y, end = mamba3_chunked(*rest, chunk=16, initial_state=state, output_final_state=True)
    assert state[1].abs().max() > 0.1 and state[3].abs().max() > 0.1  # a state and a pending half that matter
    assert max_diff(y, whole[:, 11:]) < TOL and all(max_diff(s, t) < TOL for s, t in zip(end, end_whole))


def test_lambda_one_without_rotation_is_mamba2():
    """lambda = 1 (the Euler rule), no angle: h_t = exp(dt A) h_{t-1} + dt B_t x_t, Mamba-2's recurrence."""
    x, dt, adt, lam, B, C, theta = inputs(23, seed=4)
    y = mamba3_chunked(x, dt, adt, torch.ones_like(lam), B, C, torch.zeros_like(theta), chunk=8)
    for head in range(3):  # posbench's SSD shares B and C across heads: one head at a time
        want = ssd_recurrent(x[:, :, head:head + 1] * dt[:, :, head, None, None], adt[:, :, head:head + 1],
                             B[:, :, head], C[:, :, head])
        assert max_diff(y[:, :, head:head + 1], want) < TOL


def test_one_token_by_hand():
    """From zeros, one token: h_1 = lambda dt B x^T (nothing pending), y_1 = lambda dt (C . B) x (a rotation
    of both by the same angle changes no dot product)."""
    x, dt, adt, lam, B, C, theta = inputs(1, seed=5)
    want = (lam * dt * (B * C).sum(-1))[..., None] * x
    assert max_diff(mamba3_recurrent(x, dt, adt, lam, B, C, theta), want) < TOL
    assert max_diff(mamba3_chunked(x, dt, adt, lam, B, C, theta), want) < TOL


def test_two_tokens_by_hand():
    """N = 2, one angle: B_1 = (1, 0), C_2 = (1, 0), B_2 = 0. Token 1 reaches y_2 through gamma_1 and the
    trapezoid's second half, both decayed by alpha_2, read through the rotation between the two steps:
    y_2 = alpha_2 (lambda_1 dt_1 + (1 - lambda_2) dt_2) cos(theta_2) x_1."""
    one = torch.ones(1, 2, 1, dtype=torch.float64)
    x = torch.tensor([3.0, -1.0], dtype=torch.float64).view(1, 2, 1, 1)
    dt, adt, lam = one * torch.tensor([0.5, 0.8], dtype=torch.float64).view(1, 2, 1), one * -0.3, \
        one * torch.tensor([0.7, 0.4], dtype=torch.float64).view(1, 2, 1)
    B = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=torch.float64).view(1, 2, 1, 2)
    C = torch.tensor([[0.0, 0.0], [1.0, 0.0]], dtype=torch.float64).view(1, 2, 1, 2)
    theta = torch.tensor([0.9, 0.6], dtype=torch.float64).view(1, 2, 1, 1)
    want = math.exp(-0.3) * (0.7 * 0.5 + 0.6 * 0.8) * math.cos(0.6) * 3.0
    for y in (mamba3_recurrent(x, dt, adt, lam, B, C, theta), mamba3_chunked(x, dt, adt, lam, B, C, theta, chunk=4)):
        assert abs(y[0, 0, 0, 0]) < TOL and abs(y[0, 1, 0, 0] - want) < TOL


def test_rotating_b_and_c_is_a_state_rotated_each_step():
    """The complex SSM: H_t = alpha_t R_t^T H_{t-1} + beta_t R_t^T B_{t-1} x_{t-1}^T + gamma_t B_t x_t^T,
    y_t = H_t^T C_t, with R_t the rotation by this step's angles theta_t and B, C not rotated, equals the
    recurrence on B and C rotated by the cumulated angles."""
    x, dt, adt, lam, B, C, theta = inputs(9, b=1, h=1, n=6, angles=2, seed=6)
    R = torch.eye(6, dtype=torch.float64).repeat(9, 1, 1)
    for t in range(9):
        for i in range(2):
            c, s = math.cos(theta[0, t, 0, i]), math.sin(theta[0, t, 0, i])
            R[t, 2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = torch.tensor([[c, -s], [s, c]], dtype=torch.float64)
    H, prev, out = torch.zeros(6, 4, dtype=torch.float64), torch.zeros(6, 4, dtype=torch.float64), []
    for t in range(9):
        alpha, l, d = adt[0, t, 0].exp(), lam[0, t, 0], dt[0, t, 0]
        now = B[0, t, 0][:, None] * x[0, t, 0][None, :]
        H = alpha * R[t].T @ H + (1 - l) * d * alpha * R[t].T @ prev + l * d * now
        out.append(H.T @ C[0, t, 0])
        prev = now
    assert max_diff(torch.stack(out), mamba3_recurrent(x, dt, adt, lam, B, C, theta)[0, :, 0]) < TOL


def test_the_rotation_turns_pairs_and_leaves_the_rest():
    t = torch.arange(1.0, 7.0, dtype=torch.float64)
    turned = rotate_pairs(t, torch.tensor([math.pi / 2], dtype=torch.float64))
    assert max_diff(turned, torch.tensor([-2.0, 1.0, 3, 4, 5, 6], dtype=torch.float64)) < TOL


def test_the_decay_activation_is_the_references():
    a = torch.tensor([-3.0, -0.5, 0.0, 0.5, 2.0], dtype=torch.float64)
    assert max_diff(heavy_tail(a), torch.tensor([0.25, 1 / 1.5, 1.0, 1.5, 3.0], dtype=torch.float64)) < TOL


@pytest.mark.parametrize("L", [3, 37, 64])
def test_the_layer_chunked_equals_the_layer_step_by_step(L):
    for fraction in (0.5, 1.0):
        mixer = layer("mamba3", {"chunk": 16, "rope_fraction": fraction})
        x = torch.randn(2, L, 16, dtype=torch.float64)
        with torch.no_grad():
            assert max_diff(mixer(x), mixer(x, recurrent=True)) < TOL


def test_the_layer_is_causal():
    assert_causal(layer("mamba3", {"chunk": 8}))


def test_the_chunked_form_has_no_loop():
    with CountingLoops(mamba3_chunked) as short:
        mamba3_chunked(*inputs(64), chunk=16)
    with CountingLoops(mamba3_chunked) as long:
        mamba3_chunked(*inputs(256), chunk=16)
    assert long.lines == short.lines


def test_gradients_reach_every_parameter():
    mixer = layer("mamba3").float()
    mixer(torch.randn(2, 20, 16)).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in mixer.parameters())


def test_a_state_too_small_to_rotate_and_a_bad_fraction_are_refused_in_one_line():
    with pytest.raises(PosbenchError, match="rotates no pair") as err:
        build_mixer("mamba3", SHAPE, {"d_state": 1})
    assert "\n" not in str(err.value)
    with pytest.raises(PosbenchError, match="rope_fraction"):
        build_mixer("mamba3", SHAPE, {"rope_fraction": 0.25})
