"""Gated DeltaNet (posbench/mixers/gated_deltanet.py): the chunked (WY) form equals the recurrence
S_t = alpha_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T, o_t = S_t q_t to float64 rounding,
at lengths that are and are not multiples of the chunk; the layer is causal; training runs no Python
loop over tokens."""

import pytest
import torch
import torch.nn.functional as F

from posbench.mixers.gated_deltanet import chunk_gated_delta_rule, recurrent_gated_delta_rule
from tests.mixers.helpers import CountingLoops, assert_causal, layer, max_diff

TOL = 1e-12  # measured: at most 3e-16 on the kernels, 1e-15 on the layer


def inputs(L, B=2, H=3, K=8, V=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(B, H, L, K, generator=g, dtype=torch.float64), dim=-1)
    k = F.normalize(torch.randn(B, H, L, K, generator=g, dtype=torch.float64), dim=-1)
    v = torch.randn(B, H, L, V, generator=g, dtype=torch.float64)
    decay = F.logsigmoid(torch.randn(B, H, L, generator=g, dtype=torch.float64) + 2)
    beta = torch.rand(B, H, L, generator=g, dtype=torch.float64)
    return q, k, v, decay, beta


@pytest.mark.parametrize("L", [1, 5, 16, 29, 48, 70])
@pytest.mark.parametrize("chunk", [4, 16])
def test_the_chunked_form_equals_the_recurrence(L, chunk):
    args = inputs(L, seed=L)
    assert max_diff(chunk_gated_delta_rule(*args, chunk=chunk), recurrent_gated_delta_rule(*args)) < TOL


def test_the_recurrence_is_the_papers_formula():
    """S_t = alpha_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T, o_t = S_t q_t / sqrt(d_k), literally."""
    q, k, v, g, beta = inputs(7, B=1, H=1)
    S, out = torch.zeros(5, 8, dtype=torch.float64), []
    for t in range(7):
        kt = k[0, 0, t][:, None]
        S = g[0, 0, t].exp() * S @ (torch.eye(8, dtype=torch.float64) - beta[0, 0, t] * kt @ kt.T) \
            + beta[0, 0, t] * v[0, 0, t][:, None] @ kt.T
        out.append(S @ q[0, 0, t] / 8 ** 0.5)
    assert max_diff(torch.stack(out), recurrent_gated_delta_rule(q, k, v, g, beta)[0, 0]) < TOL


@pytest.mark.parametrize("L", [3, 37, 64])
def test_the_layer_chunked_equals_the_layer_step_by_step(L):
    mixer = layer("gdn", {"chunk": 16})
    x = torch.randn(2, L, 16, dtype=torch.float64)
    with torch.no_grad():
        assert max_diff(mixer(x), mixer(x, recurrent=True)) < TOL


def test_the_layer_is_causal():
    assert_causal(layer("gdn", {"chunk": 8}))


def test_the_chunked_form_loops_over_chunks_not_tokens():
    args = inputs(64)
    with CountingLoops(chunk_gated_delta_rule) as short:
        chunk_gated_delta_rule(*args, chunk=32)
    args = inputs(256)
    with CountingLoops(chunk_gated_delta_rule) as long:
        chunk_gated_delta_rule(*args, chunk=128)
    assert long.lines == short.lines  # 4x the tokens in as many chunks: the same Python lines run


def test_gradients_reach_every_parameter():
    mixer = layer("gdn").float()
    mixer(torch.randn(2, 20, 16)).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in mixer.parameters())


@pytest.mark.parametrize("L", [5, 29, 48])
def test_the_chunked_form_from_a_state_equals_the_recurrence_continued_from_it(L):
    """The recurrence runs 11 tokens, then both forms continue from its state: the same outputs and final state."""
    q, k, v, g, beta = inputs(11 + L, seed=L)
    first = [t[:, :, :11] for t in (q, k, v, g, beta)]
    rest = [t[:, :, 11:] for t in (q, k, v, g, beta)]
    _, S = recurrent_gated_delta_rule(*first, output_final_state=True)
    whole, S_whole = recurrent_gated_delta_rule(q, k, v, g, beta, output_final_state=True)
    o, S_end = chunk_gated_delta_rule(*rest, chunk=16, initial_state=S, output_final_state=True)
    o_rec, S_rec = recurrent_gated_delta_rule(*rest, initial_state=S, output_final_state=True)
    assert S.abs().max() > 0.1  # a state that matters
    assert max_diff(o, o_rec) < TOL and max_diff(S_end, S_rec) < TOL
    assert max_diff(o, whole[:, :, 11:]) < TOL and max_diff(S_end, S_whole) < TOL
