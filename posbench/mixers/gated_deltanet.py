"""Gated DeltaNet (Yang, Kautz, Hatamizadeh 2024, "Gated Delta Networks: Improving Mamba2 with Delta
Rule", arXiv 2412.06464; used 3:1 with attention in Qwen3-Next).

Per head, a state S_t (d_v x d_k) is decayed, then corrected toward v_t at key k_t (the delta rule):

    S_t = alpha_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T,      o_t = S_t q_t / sqrt(d_k)

with q_t, k_t L2-normalised, beta_t = sigmoid(W_b x_t) in (0, 1) the writing strength, and
alpha_t = exp(g_t), g_t = -exp(A_log) softplus(W_a x_t + dt_bias) < 0 the decay (Mamba-2's gate).
q, k and v each pass a short causal depthwise convolution and SiLU; the output is per-head
RMS-normalised and gated, o <- RMSNorm(o) * silu(W_g x), then projected back to d_model.

Training form (``chunk_gated_delta_rule``): the sequence in chunks of C tokens. Within a chunk, with
gamma_i = g_1 + ... + g_i and Gamma_ij = exp(gamma_i - gamma_j) (i >= j), the WY representation of
the product of the chunk's Householder-like factors is T = (I + tril(diag(beta) (K K^T * Gamma), -1))^-1,
u = T (beta * V), w = T (beta * K * exp(gamma)); then per chunk (state S, here d_k x d_v):
    v' = u - w S,   o = (Q * exp(gamma)) S + tril(Q K^T * Gamma) v',
    S <- exp(gamma_C) S + (K * exp(gamma_C - gamma))^T v'.
T comes from one triangular solve for all chunks at once (no Python loop over tokens); the loop is
over chunks. ``recurrent_gated_delta_rule`` is the same one token at a time: the reference.

Reference code: fla-org/flash-linear-attention (MIT): ``fla/ops/gated_delta_rule/naive.py``
(``naive_recurrent_gated_delta_rule``, ``naive_chunk_gated_delta_rule``; the latter inverts
I + A by forward substitution, a loop over the chunk's tokens, where this file solves the
triangular system) and ``fla/layers/gated_deltanet.py`` (``GatedDeltaNet``: projections, A_log
uniform(0, 16) and dt_bias initialisation, ShortConvolution, FusedRMSNormGated).

Deviations, for toy models: heads and head dimension are the model's (n_heads, d_model / n_heads;
fla's default is 6 heads of 256 at d_model 2048, a key width 0.75 d_model), and the value width is
``expand_v`` times the key width with expand_v = 1 by default (fla: 2), so that a layer has about the
parameters of an attention layer (5 d_model^2 against 4). No negative eigenvalues (fla's
``allow_neg_eigval``), and the kernels run in float32 at least (fla's Triton kernels keep bf16 inputs
with float32 states). Both kernels take an initial state and return the final one (fla's
``initial_state`` / ``output_final_state``); the layer's state is S and the three convolutions' last
inputs (``forward_with_state``: state passing and the window control, posbench/mixers/state.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from posbench.core.params import param, positive
from posbench.mixers import register
from posbench.mixers.base import CausalConv, Mixer, inverse_softplus_dt, rms_norm


def recurrent_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
    """The reference, one token at a time. q, k: [B, H, L, K] (L2-normalised), v: [B, H, L, V],
    g: [B, H, L] log decay (alpha = exp(g)), beta: [B, H, L] -> o: [B, H, L, V]; ``initial_state``
    [B, H, K, V] (None: zeros); ``output_final_state``: (o, S_L)."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    # [B, H, K, V]: the paper's S transposed
    S = q.new_zeros(*q.shape[:2], q.shape[-1], v.shape[-1]) if initial_state is None else initial_state.to(q.dtype)
    out = []
    for t in range(q.shape[2]):
        S = S * g[:, :, t, None, None].exp()  # alpha_t S_{t-1}
        k_t = k[:, :, t]
        delta = beta[:, :, t, None] * (v[:, :, t] - torch.einsum("bhk,bhkv->bhv", k_t, S))  # beta (v - S k)
        S = S + k_t[..., :, None] * delta[..., None, :]  # + k delta^T
        out.append(torch.einsum("bhk,bhkv->bhv", q[:, :, t] * scale, S))
    o = torch.stack(out, dim=2) if out else v.new_zeros(v.shape)
    return (o, S) if output_final_state else o


def chunk_gated_delta_rule(q, k, v, g, beta, chunk: int = 64, scale=None, initial_state=None, output_final_state=False):
    """The training form (WY representation, module docstring): same arguments and result as
    ``recurrent_gated_delta_rule``; any length (the last chunk is padded with zeros, which
    changes nothing before it, nor the final state: alpha = 1 and k = 0 there). A loop over chunks,
    none over tokens."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    B, H, L, K = q.shape
    pad = -L % chunk
    if pad:
        q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
        g, beta = (F.pad(t, (0, pad)) for t in (g, beta))
    n = (L + pad) // chunk
    # [B, H, n, C, .]: one row of chunks per head
    q, k, v = (t.reshape(B, H, n, chunk, -1) for t in (q * scale, k, v))
    g, beta = g.reshape(B, H, n, chunk), beta.reshape(B, H, n, chunk)
    gamma = g.cumsum(-1)  # [B, H, n, C]
    lower = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).tril()
    # Gamma_ij = exp(gamma_i - gamma_j) on and below the diagonal, 0 above: [B, H, n, C, C]
    decay = (gamma[..., :, None] - gamma[..., None, :]).masked_fill(~lower, float("-inf")).exp()
    k_beta = k * beta[..., None]
    A = ((k_beta @ k.transpose(-1, -2)) * decay).tril(-1)  # strictly lower
    eye = torch.eye(chunk, dtype=q.dtype, device=q.device)
    # T = (I + A)^-1 applied to beta V and beta K exp(gamma), for every chunk at once
    u, w = torch.linalg.solve_triangular(eye + A, torch.cat([v * beta[..., None], k_beta * gamma.exp()[..., None]], -1),
                                         upper=False, unitriangular=True).split([v.shape[-1], K], -1)
    qk = (q @ k.transpose(-1, -2)) * decay  # [B, H, n, C, C], lower triangular (decay is)
    S = q.new_zeros(B, H, K, v.shape[-1]) if initial_state is None else initial_state.to(q.dtype)
    out = []
    for i in range(n):  # over chunks
        v_new = u[:, :, i] - w[:, :, i] @ S  # [B, H, C, V]
        out.append((q[:, :, i] * gamma[:, :, i, :, None].exp()) @ S + qk[:, :, i] @ v_new)
        last = gamma[:, :, i, -1]  # [B, H]
        S = S * last[..., None, None].exp() + (k[:, :, i] * (last[..., None] - gamma[:, :, i]).exp()[..., None]).transpose(-1, -2) @ v_new
    o = torch.stack(out, dim=2).reshape(B, H, n * chunk, -1)[:, :, :L]
    return (o, S) if output_final_state else o


@register("gdn")
class GatedDeltaNet(Mixer):
    """Gated DeltaNet layer (module docstring): x [B, L, D] -> [B, L, D]."""

    @dataclass
    class Params:
        expand_v: int = param(1, positive)  # value width / key width (fla: 2)
        conv_size: int = param(4, positive)  # the short convolution's taps (fla: 4)
        chunk: int = param(64, positive)  # tokens per chunk of the training form (fla: 64)
        norm_eps: float = param(1e-5, positive)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        D, H = shape.d_model, shape.n_heads
        self.heads, self.key_dim, self.value_dim = H, D, D * params.expand_v
        n = self.writes = self.writes_per_token(params)  # keys, values and betas per token (1; DeltaProduct: n_h)
        self.q_proj = nn.Linear(D, self.key_dim, bias=False)
        self.k_proj = nn.Linear(D, n * self.key_dim, bias=False)
        self.v_proj = nn.Linear(D, n * self.value_dim, bias=False)
        self.a_proj = nn.Linear(D, H, bias=False)  # decay: g = -exp(A_log) softplus(a + dt_bias)
        self.b_proj = nn.Linear(D, n * H, bias=False)  # writing strength: beta = sigmoid(b)
        self.A_log = nn.Parameter(torch.empty(H).uniform_(0, 16).log())
        self.dt_bias = nn.Parameter(inverse_softplus_dt(H))
        self.q_conv = CausalConv(self.key_dim, params.conv_size, bias=False)
        self.k_conv = CausalConv(n * self.key_dim, params.conv_size, bias=False)
        self.v_conv = CausalConv(n * self.value_dim, params.conv_size, bias=False)
        self.g_proj = nn.Linear(D, self.value_dim, bias=False)  # the output gate
        self.o_norm = nn.Parameter(torch.ones(self.value_dim // H))
        self.out_proj = nn.Linear(self.value_dim, D, bias=False)

    def forward_with_state(self, x, state, recurrent=False):
        """state: (q, k, v convolutions' last inputs, S [B, H, K, V]) or None (zeros)."""
        B, L, _ = x.shape
        q_tail, k_tail, v_tail, S0 = state if state is not None else (None,) * 4
        qx, kx, vx = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        H = self.heads
        dtype = torch.promote_types(x.dtype, torch.float32)  # the kernels in float32 at least

        def heads(t, n=1):  # [B, L, n * H * d] -> [B, H, L * n, d]: token t's j-th write at t n + j
            return t.view(B, L, n, H, -1).permute(0, 3, 1, 2, 4).reshape(B, H, L * n, -1).to(dtype)

        n = self.writes
        q = F.normalize(heads(F.silu(self.q_conv(qx, q_tail))), dim=-1)
        k = F.normalize(heads(F.silu(self.k_conv(kx, k_tail)), n), dim=-1)
        v = heads(F.silu(self.v_conv(vx, v_tail)), n)
        beta = heads(self.b_proj(x).to(dtype).sigmoid()[..., None], n)[..., 0]  # [B, H, L * n]
        g = (-self.A_log.to(dtype).exp() * F.softplus(self.a_proj(x).to(dtype) + self.dt_bias)).transpose(1, 2)
        o, S = self.delta_rule(q, k, v, g, beta, S0, recurrent)
        o = rms_norm(o, self.o_norm, self.params.norm_eps) * F.silu(heads(self.g_proj(x)))  # [B, H, L, Dv]
        final = (self.q_conv.next_tail(qx, q_tail), self.k_conv.next_tail(kx, k_tail), self.v_conv.next_tail(vx, v_tail), S)
        return self.out_proj(o.transpose(1, 2).reshape(B, L, self.value_dim).to(x.dtype)), final

    def writes_per_token(self, params) -> int:
        """Keys, values and betas each token writes (one: the delta rule; DeltaProduct: n_h)."""
        return 1

    def delta_rule(self, q, k, v, g, beta, S0, recurrent):
        """(o, final S) of the kernel, step by step (``recurrent``) or chunked."""
        if recurrent:
            return recurrent_gated_delta_rule(q, k, v, g, beta, initial_state=S0, output_final_state=True)
        return chunk_gated_delta_rule(q, k, v, g, beta, self.params.chunk, initial_state=S0, output_final_state=True)
