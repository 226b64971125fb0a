"""Gated DeltaProduct (posbench/mixers/deltaproduct.py): the chunked form (Gated DeltaNet's kernel on
the interleaved micro-steps) equals the recurrence with n_h Householder steps per token to float64
rounding; the recurrence is the paper's product formula; n_h = 1 is Gated DeltaNet weight for weight;
the decay applies once per token; the layer is causal; n_h < 1 is refused in one line."""

import pytest
import torch
import torch.nn.functional as F

from posbench.core.errors import PosbenchError
from posbench.mixers import build_mixer
from posbench.mixers.deltaproduct import chunk_gated_delta_product, recurrent_gated_delta_product
from posbench.mixers.gated_deltanet import recurrent_gated_delta_rule
from tests.mixers.helpers import SHAPE, CountingLoops, assert_causal, layer, max_diff

TOL = 1e-12


def inputs(L, n, B=2, H=3, K=8, V=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(B, H, L, K, generator=g, dtype=torch.float64), dim=-1)
    k = F.normalize(torch.randn(B, H, L * n, K, generator=g, dtype=torch.float64), dim=-1)
    v = torch.randn(B, H, L * n, V, generator=g, dtype=torch.float64)
    decay = F.logsigmoid(torch.randn(B, H, L, generator=g, dtype=torch.float64) + 1)
    beta = 2 * torch.rand(B, H, L * n, generator=g, dtype=torch.float64)  # up to 2: negative eigenvalues too
    return q, k, v, decay, beta


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("L", [1, 7, 16, 29])
def test_the_chunked_form_equals_the_recurrence(n, L):
    args = inputs(L, n, seed=L + n)
    want, S = recurrent_gated_delta_product(*args, n, output_final_state=True)
    o, S_chunk = chunk_gated_delta_product(*args, n, chunk=8, output_final_state=True)
    assert max_diff(o, want) < TOL and max_diff(S_chunk, S) < TOL


@pytest.mark.parametrize("n", [2, 3])
def test_the_recurrence_is_the_papers_product_of_householder_factors(n):
    """S_t = alpha_t S_{t-1} prod_j (I - beta_j k_j k_j^T) + sum_j beta_j v_j k_j^T (prod_{i > j} (I - beta_i k_i k_i^T)),
    o_t = S_t q_t / sqrt(d_k), with explicit matrices."""
    q, k, v, g, beta = inputs(6, n, B=1, H=1)
    eye, S, out = torch.eye(8, dtype=torch.float64), torch.zeros(5, 8, dtype=torch.float64), []
    for t in range(6):
        S = g[0, 0, t].exp() * S
        for j in range(t * n, (t + 1) * n):
            kj = k[0, 0, j][:, None]
            S = S @ (eye - beta[0, 0, j] * kj @ kj.T) + beta[0, 0, j] * v[0, 0, j][:, None] @ kj.T
        out.append(S @ q[0, 0, t] / 8 ** 0.5)
    assert max_diff(torch.stack(out), recurrent_gated_delta_product(q, k, v, g, beta, n)[0, 0]) < TOL


def test_one_householder_step_is_the_gated_delta_rule():
    args = inputs(13, 1, seed=3)
    assert max_diff(recurrent_gated_delta_product(*args, 1), recurrent_gated_delta_rule(*args)) < TOL


def test_the_decay_applies_once_per_token_not_once_per_step():
    """With every beta 0 nothing is written: a state decays by alpha_t per token, whatever n_h (a decay on every
    micro-step would give alpha_t^n_h)."""
    q, k, v, g, beta = inputs(5, 3, seed=1)
    S0 = torch.randn(2, 3, 8, 5, dtype=torch.float64)
    o, S = chunk_gated_delta_product(q, k, v, g, torch.zeros_like(beta), 3, chunk=4, initial_state=S0,
                                     output_final_state=True)
    assert max_diff(S, S0 * g.sum(-1).exp()[..., None, None]) < TOL
    assert max_diff(o[:, :, 0], torch.einsum("bhk,bhkv->bhv", q[:, :, 0] / 8 ** 0.5, S0 * g[:, :, 0, None, None].exp())) < TOL


def test_one_householder_step_is_gated_deltanet_weight_for_weight():
    gdn = layer("gdn", {"chunk": 8})
    product = build_mixer("deltaproduct", SHAPE, {"chunk": 8, "householder": 1}).double()
    product.load_state_dict(gdn.state_dict())  # the same names and shapes: strict
    x = torch.randn(2, 29, SHAPE.d_model, dtype=torch.float64)
    with torch.no_grad():
        assert torch.equal(product(x), gdn(x))
        assert torch.equal(product(x, recurrent=True), gdn(x, recurrent=True))


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("L", [3, 37])
def test_the_layer_chunked_equals_the_layer_step_by_step(n, L):
    for neg in (False, True):
        mixer = layer("deltaproduct", {"chunk": 16, "householder": n, "neg_eigval": neg})
        x = torch.randn(2, L, 16, dtype=torch.float64)
        with torch.no_grad():
            assert max_diff(mixer(x), mixer(x, recurrent=True)) < TOL


def test_more_householder_steps_write_more_keys():
    mixer = layer("deltaproduct", {"householder": 3})
    assert mixer.k_proj.out_features == 3 * SHAPE.d_model and mixer.b_proj.out_features == 3 * SHAPE.n_heads
    assert mixer.q_proj.out_features == SHAPE.d_model and mixer.a_proj.out_features == SHAPE.n_heads


def test_the_layer_is_causal():
    assert_causal(layer("deltaproduct", {"chunk": 8}))


def test_the_chunked_form_loops_over_chunks_not_tokens():
    with CountingLoops(chunk_gated_delta_product) as short:
        chunk_gated_delta_product(*inputs(64, 2), 2, chunk=32)
    with CountingLoops(chunk_gated_delta_product) as long:
        chunk_gated_delta_product(*inputs(256, 2), 2, chunk=128)
    assert long.lines == short.lines


def test_gradients_reach_every_parameter():
    mixer = layer("deltaproduct").float()
    mixer(torch.randn(2, 20, 16)).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in mixer.parameters())


@pytest.mark.parametrize("bad", [0, -1])
def test_fewer_than_one_householder_step_is_refused_in_one_line(bad):
    with pytest.raises(PosbenchError, match="householder") as err:
        build_mixer("deltaproduct", SHAPE, {"householder": bad})
    assert "\n" not in str(err.value) and "positive" in str(err.value)
