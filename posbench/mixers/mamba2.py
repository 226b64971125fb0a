"""Mamba-2 (Dao & Gu 2024, "Transformers are SSMs: Generalized Models and Efficient Algorithms
Through Structured State Space Duality", arXiv 2405.21060): the SSD layer.

Per head (P channels, state N), with a scalar decay per head and step:

    h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T,      y_t = h_t C_t + D x_t

where A = -exp(A_log) < 0 (one per head), dt_t = softplus(W_dt u_t + dt_bias) > 0, and B_t, C_t (N
each, one group shared by the heads) and x_t come from the input. The layer: in_proj(u) -> z, x, B,
C, dt; a short causal depthwise convolution and SiLU over (x, B, C); the scan; y <- RMSNorm(y *
silu(z)); out_proj.

Training form (``ssd_chunked``): the paper's Listing 1 (``ssd_minimal_discrete``) with X = x dt and
A dt: in chunks of C tokens, the output within a chunk is the masked "attention" (C_i . B_j)
exp(sum_{j<s<=i} A_s) x_j; each chunk's final state, the chunk-to-chunk recurrence (itself one
segment-sum matrix over chunks, no loop) and the states' contribution to the next chunk's outputs
are einsums. No Python loop at all; ``ssd_recurrent`` is the recurrence one token at a time, the
reference.

Reference code: state-spaces/mamba (Apache-2.0): ``mamba_ssm/modules/ssd_minimal.py``
(``segsum``, ``ssd_minimal_discrete``) and ``mamba_ssm/modules/mamba2_simple.py`` / ``mamba2.py``
(in_proj split [z, xBC, dt], conv1d with bias and SiLU, dt_bias from dt log-uniform in [1e-3, 0.1],
A_log = log uniform(1, 16), D = 1, RMSNormGated with norm_before_gate=False, out_proj).

Deviations, for toy models: the head dimension is the model's (d_model / n_heads; Mamba-2: 64) and
the state N = 16 (Mamba-2: 128; Mamba-1's 16); expand 2 as in Mamba-2, one group. The chunk is 64
tokens (Mamba-2: 256), the length of a toy training window. Lengths that are not a multiple of the
chunk are padded with zeros (X = 0, A dt = 0: nothing changes before the padding), where the
listing asserts. No dt clamp (dt_limit is (0, inf) by default). Both forms take an initial state and
return the final one (the listing's ``initial_states`` and ``final_state``); the layer's state is h
and the convolution's last inputs (``forward_with_state``: state passing and the window control,
posbench/mixers/state.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from posbench.core.params import param, positive
from posbench.mixers import register
from posbench.mixers.base import CausalConv, Mixer, inner_heads, inverse_softplus_dt, rms_norm


def segsum(x: torch.Tensor) -> torch.Tensor:
    """[..., T] -> [..., T, T]: out[i, j] = x_{j+1} + ... + x_i for i >= j, -inf above (the listing's
    stable segment sum: a cumulative sum of masked copies, no difference of large sums)."""
    T = x.shape[-1]
    x = x[..., None].expand(*x.shape, T)  # x[..., i, j] = x_i
    x = x.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=x.device).tril(-1), 0).cumsum(-2)
    return x.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), float("-inf"))


def ssd_chunked(X, A, B, C, chunk: int = 64, initial_state=None, output_final_state=False):
    """X: [b, L, h, p] (x dt), A: [b, L, h] (A dt), B, C: [b, L, n] (one group) -> Y: [b, L, h, p];
    ``initial_state`` h_0 [b, h, p, n] (None: zeros); ``output_final_state``: (Y, h_L)."""
    L = X.shape[1]
    pad = -L % chunk
    if pad:
        X, B, C = (F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad)) for t in (X, B, C))
        A = F.pad(A, (0, 0, 0, pad))
    b, n = X.shape[0], X.shape[1] // chunk
    X, A, B, C = (t.reshape(b, n, chunk, *t.shape[2:]) for t in (X, A, B, C))  # [b, c, l, ...]
    A = A.permute(0, 3, 1, 2)  # [b, h, c, l]
    A_cumsum = A.cumsum(-1)
    # 1. within each chunk (diagonal blocks)
    Y_diag = torch.einsum("bcln,bcsn,bhcls,bcshp->bclhp", C, B, segsum(A).exp(), X)
    # 2. each chunk's final state
    decay_states = (A_cumsum[..., -1:] - A_cumsum).exp()
    states = torch.einsum("bcln,bhcl,bclhp->bchpn", B, decay_states, X)
    # 3. the state at each chunk's start: the recurrence over chunks as one segment-sum matrix
    first = torch.zeros_like(states[:, :1]) if initial_state is None else initial_state[:, None].to(states.dtype)
    states = torch.cat([first, states], dim=1)
    decay_chunk = segsum(F.pad(A_cumsum[..., -1], (1, 0))).exp()  # [b, h, c + 1, c + 1]
    states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
    states, final = states[:, :-1], states[:, -1]
    # 4. the states' contribution to each chunk's outputs
    Y_off = torch.einsum("bcln,bchpn,bhcl->bclhp", C, states, A_cumsum.exp())
    Y = (Y_diag + Y_off).reshape(b, n * chunk, *X.shape[3:])[:, :L]
    return (Y, final) if output_final_state else Y


def ssd_recurrent(X, A, B, C, initial_state=None, output_final_state=False):
    """The reference, one token at a time: h_t = exp(A_t) h_{t-1} + X_t B_t^T, Y_t = h_t C_t."""
    h = X.new_zeros(X.shape[0], X.shape[2], X.shape[3], B.shape[-1]) if initial_state is None \
        else initial_state.to(X.dtype)  # [b, h, p, n]
    out = []
    for t in range(X.shape[1]):
        h = h * A[:, t, :, None, None].exp() + X[:, t, :, :, None] * B[:, t, None, None, :]
        out.append(torch.einsum("bhpn,bn->bhp", h, C[:, t]))
    Y = torch.stack(out, dim=1) if out else X.new_zeros(X.shape)
    return (Y, h) if output_final_state else Y


@register("mamba2")
class Mamba2(Mixer):
    """Mamba-2's SSD layer (module docstring): u [B, L, D] -> [B, L, D]."""

    @dataclass
    class Params:
        expand: int = param(2, positive)  # inner width / d_model (Mamba-2: 2)
        head_dim: Optional[int] = param(None, positive)  # null: the model's d_model / n_heads (Mamba-2: 64)
        d_state: int = param(16, positive)  # N (Mamba-2: 128)
        conv_size: int = param(4, positive)  # (Mamba-2: 4)
        chunk: int = param(64, positive)  # tokens per chunk of the training form (Mamba-2: 256)
        norm_eps: float = param(1e-5, positive)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        D = shape.d_model
        self.head_dim = params.head_dim or shape.head_dim
        self.d_inner, self.heads = inner_heads("mamba2", D, params.expand, self.head_dim)
        N = params.d_state
        self.in_proj = nn.Linear(D, 2 * self.d_inner + 2 * N + self.heads, bias=False)  # z, x, B, C, dt
        self.conv = CausalConv(self.d_inner + 2 * N, params.conv_size, bias=True)
        self.dt_bias = nn.Parameter(inverse_softplus_dt(self.heads))
        self.A_log = nn.Parameter(torch.empty(self.heads).uniform_(1, 16).log())
        self.D = nn.Parameter(torch.ones(self.heads))
        self.norm = nn.Parameter(torch.ones(self.d_inner))
        self.out_proj = nn.Linear(self.d_inner, D, bias=False)

    def forward_with_state(self, u, state, recurrent=False):
        """state: (the convolution's last inputs, h [b, h, p, n]) or None (zeros)."""
        b, L, _ = u.shape
        tail, h0 = state if state is not None else (None, None)
        N, dtype = self.params.d_state, torch.promote_types(u.dtype, torch.float32)
        z, xBC, dt = self.in_proj(u).split([self.d_inner, self.d_inner + 2 * N, self.heads], -1)
        x, B, C = F.silu(self.conv(xBC, tail)).to(dtype).split([self.d_inner, N, N], -1)
        dt = F.softplus(dt.to(dtype) + self.dt_bias)  # [b, L, h]
        A = -self.A_log.to(dtype).exp()  # [h]
        x = x.view(b, L, self.heads, self.head_dim)
        if recurrent:
            y, h = ssd_recurrent(x * dt[..., None], A * dt, B, C, h0, output_final_state=True)
        else:
            y, h = ssd_chunked(x * dt[..., None], A * dt, B, C, self.params.chunk, h0, output_final_state=True)
        y = (y + x * self.D.to(dtype)[:, None]).reshape(b, L, self.d_inner)
        y = rms_norm(y * F.silu(z.to(dtype)), self.norm, self.params.norm_eps)
        return self.out_proj(y.to(u.dtype)), (self.conv.next_tail(xBC, tail), h)
