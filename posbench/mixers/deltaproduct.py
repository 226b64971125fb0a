"""Gated DeltaProduct (Siems et al. 2025, "DeltaProduct: Improving
State-Tracking in Linear RNNs via Householder Products", arXiv 2502.10297, NeurIPS 2025).

Gated DeltaNet (posbench/mixers/gated_deltanet.py) with n_h delta-rule steps per token instead of one:
token t produces n_h keys k_{t,j} (L2-normalised), values v_{t,j} and writing strengths beta_{t,j},
and, per head, the state is decayed once, then corrected n_h times (a product of n_h generalised
Householder transformations, whose eigenvalues the n_h keys place independently):

    S <- alpha_t S_{t-1};   S <- S (I - beta_{t,j} k_{t,j} k_{t,j}^T) + beta_{t,j} v_{t,j} k_{t,j}^T, j = 1 .. n_h;
    S_t = S,   o_t = S_t q_t / sqrt(d_k)

with one query, one decay alpha_t = exp(g_t) (Gated DeltaNet's) and one output gate per token. With
n_h = 1 it is Gated DeltaNet, weight for weight. Equivalently (the paper's remark, and the reference's
chunked form): Gated DeltaNet over the n_h L "micro-steps" (token t's j-th write at n_h t + j), with
the decay on each token's first micro-step only (g = 0, alpha = 1, on the others), the query on its
last (q = 0 on the others), and the output read there. ``chunk_gated_delta_product`` is exactly that:
posbench's chunked Gated DeltaNet kernel on the interleaved sequence (chunks of ``chunk`` tokens, i.e.
chunk n_h micro-steps); ``recurrent_gated_delta_product`` is the formula above one token at a time,
n_h Householder steps within it: the reference the tests check the chunked form against.

Reference code: fla-org/flash-linear-attention (MIT): ``fla/layers/gated_deltaproduct.py``
(``GatedDeltaProduct``: k_proj, v_proj and b_proj n_h times as wide, laid out ``(n h d)`` per token;
the short convolutions over those widths; one q, one a_proj decay, A_log and dt_bias as Gated
DeltaNet's; num_householder = 2 by default; its recurrent mode interleaves g on micro-step 0 and q on
the last), ``fla/ops/gated_delta_product/naive.py`` (``naive_recurrent_gated_delta_product``: decay
once per token, then the n_h updates, then the readout) and ``chunk_ref.py``
(``chunk_gated_delta_product_ref``: the interleaved sequence through the gated delta rule's chunk
kernel, output every n_h-th step).

Deviations: those of posbench's Gated DeltaNet (toy widths, expand_v 1, float32 kernels). fla's
layer sets ``allow_neg_eigval=True`` (beta in (0, 2): Householder eigenvalues down to -1, the
paper's state-tracking setting); here ``neg_eigval`` is off by default so that n_h = 1 is posbench's
Gated DeltaNet exactly (which has none); turn it on with ``+model.mixer_params.deltaproduct.neg_eigval=true``.
The default n_h = 2 is fla's layer default (``num_householder=2``); the paper varies n_h, and which
value its language-modelling runs use most was not checked here.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from posbench.core.params import param, positive
from posbench.mixers import register
from posbench.mixers.gated_deltanet import GatedDeltaNet, chunk_gated_delta_rule


def recurrent_gated_delta_product(q, k, v, g, beta, steps: int, scale=None, initial_state=None, output_final_state=False):
    """The reference, one token at a time with ``steps`` (n_h) Householder updates each. q: [B, H, L, K]
    (L2-normalised), k: [B, H, L n_h, K] (token t's j-th key at t n_h + j, L2-normalised), v: [B, H,
    L n_h, V], g: [B, H, L] log decay, beta: [B, H, L n_h] -> o: [B, H, L, V]; ``initial_state`` [B, H,
    K, V] (None: zeros); ``output_final_state``: (o, S_L)."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    S = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1]) if initial_state is None else initial_state.to(q.dtype)
    out = []
    for t in range(q.shape[2]):
        S = S * g[:, :, t, None, None].exp()  # alpha_t S_{t-1}: once per token
        for j in range(t * steps, (t + 1) * steps):  # S (I - beta k k^T) + beta v k^T, n_h times
            k_j = k[:, :, j]
            delta = beta[:, :, j, None] * (v[:, :, j] - torch.einsum("bhk,bhkv->bhv", k_j, S))
            S = S + k_j[..., :, None] * delta[..., None, :]
        out.append(torch.einsum("bhk,bhkv->bhv", q[:, :, t] * scale, S))
    o = torch.stack(out, dim=2) if out else v.new_zeros(*v.shape[:2], 0, v.shape[-1])
    return (o, S) if output_final_state else o


def chunk_gated_delta_product(q, k, v, g, beta, steps: int, chunk: int = 64, scale=None, initial_state=None,
                              output_final_state=False):
    """The training form: same arguments and result as ``recurrent_gated_delta_product``. Gated
    DeltaNet's chunked kernel over the L n_h micro-steps, with token t's decay on its first micro-step
    and its query on its last (zeros elsewhere), read every n_h-th step; ``chunk`` tokens a chunk."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    B, H, L, K = q.shape
    q_micro = q.new_zeros(B, H, L, steps, K)
    q_micro[:, :, :, -1] = q
    g_micro = g.new_zeros(B, H, L, steps)
    g_micro[:, :, :, 0] = g
    o, S = chunk_gated_delta_rule(q_micro.reshape(B, H, L * steps, K), k, v, g_micro.reshape(B, H, L * steps), beta,
                                  chunk * steps, scale, initial_state, output_final_state=True)
    o = o[:, :, steps - 1::steps]
    return (o, S) if output_final_state else o


@register("deltaproduct")
class GatedDeltaProduct(GatedDeltaNet):
    """Gated DeltaProduct layer (module docstring): x [B, L, D] -> [B, L, D]. The state (for state
    passing and the window control) is Gated DeltaNet's: the three convolutions' last inputs and S."""

    @dataclass
    class Params(GatedDeltaNet.Params):
        householder: int = param(2, positive)  # n_h: delta-rule steps (Householder factors) per token (fla: 2)
        neg_eigval: bool = False  # beta in (0, 2) instead of (0, 1) (fla's allow_neg_eigval, on there)

    def writes_per_token(self, params) -> int:
        return params.householder

    def delta_rule(self, q, k, v, g, beta, S0, recurrent):
        beta = 2 * beta if self.params.neg_eigval else beta
        if recurrent:
            return recurrent_gated_delta_product(q, k, v, g, beta, self.writes, initial_state=S0, output_final_state=True)
        return chunk_gated_delta_product(q, k, v, g, beta, self.writes, self.params.chunk, initial_state=S0,
                                         output_final_state=True)
