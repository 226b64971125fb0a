"""Mamba-3 (Lahoti et al. 2026, "Mamba-3: Improved Sequence Modeling using State Space Principles",
arXiv 2603.15569, ICLR 2026): the SISO layer.

Per head (P channels, state N), with a scalar decay per head and step, Mamba-2's recurrence
(posbench/mixers/mamba2.py) changed in two ways:

* the exponential-trapezoidal discretisation: the input enters through both ends of the step,

      h_t = alpha_t h_{t-1} + beta_t B_{t-1} x_{t-1}^T + gamma_t B_t x_t^T,      y_t = h_t^T C_t + D x_t,
      alpha_t = exp(dt_t A_t),  beta_t = (1 - lambda_t) dt_t alpha_t,  gamma_t = lambda_t dt_t,

  with lambda_t = sigmoid(W_lambda u_t) in (0, 1) per head (lambda = 1: Mamba-2's Euler rule;
  1/2: the trapezoid), and A_t = -max(f(W_A u_t), A_floor) data-dependent, f(a) = 1 + a for a >= 0,
  1 / (1 - a) below (the reference's ``heavy_tail_activation``);
* a complex-valued state, realised as a data-dependent rotation of B and C (the paper relates it to
  data-dependent RoPE): each head keeps angles phi_t = phi_{t-1} + dt_t pi tanh(W_theta u_t) (mod 2 pi; one set of
  N rope_fraction / 2 angles shared by the heads, scaled by each head's dt), and B_t, C_t are rotated
  pairwise, (b_{2i}, b_{2i+1}) by phi_{t,i}, before the recurrence above. Then C_t . B_s is
  C_t^T R(phi_s - phi_t) B_s: the state h_t = sum_s (...) R(phi_s) B_s x_s^T, read in C_t's frame,
  is a complex diagonal SSM whose transition rotates by the step theta_t = dt_t pi tanh(W_theta u_t) each
  step (the tests check the two forms equal).

B and C (one group shared by the heads) are RMS-normalised over N, then given a learned bias per head
(initialised to 1), then rotated; there is no short convolution; the output is y * silu(z) (no norm:
the reference's ``is_outproj_norm=False`` default), then out_proj.

Training form (``mamba3_chunked``): the recurrence is linear in its inputs, so it is the sum of two
Mamba-2 SSD scans with the same decays (``ssd_chunked``, heads folded into the batch, as each head has
its own rotated B and C), one driven by gamma_t B_t x_t^T from the passed state, one by beta_t B_{t-1}
x_{t-1}^T from zeros (its first input the passed state's pending half), both read by C_t. The
reference's quadratic form (``mamba3_siso_fwd_ref``) instead scales token s's input by gamma_s + (1 -
lambda_{s+1}) dt_{s+1} and takes the surplus off the diagonal: the same function, but token t's output
then depends on token t + 1 in its rounding (added and taken away), so the layer would not be causal
to the bit; two scans cost twice the SSD and keep it exact. No Python loop; ``mamba3_recurrent`` is
the recurrence one token at a time, the reference. The state (for state passing and the window
control, posbench/mixers/state.py) is the reference's four: the angles, h, and the last token's
rotated B and its x (the trapezoid's pending half).

Reference code: state-spaces/mamba (Apache-2.0), ``mamba_ssm/modules/mamba3.py`` (``Mamba3``:
in_proj split [z, x, B, C, dd_dt, dd_A, trap, angles], dt_bias from dt log-uniform in [1e-3, 0.1],
B_bias = C_bias = 1, B_norm / C_norm, D = 1, rope_fraction 0.5, A_floor 1e-4, heavy_tail_activation)
and ``tests/ops/triton/test_mamba3_siso.py`` (``mamba3_siso_step_ref``: the step recurrence above,
angles pi tanh(.) dt cumulated mod 2 pi, pairwise rotation of the first 2 x (number of angles)
channels; ``mamba3_siso_fwd_ref``: the scaled-input quadratic form with the shifted-gamma correction,
whose equality with the step form ``mamba3_chunked`` keeps, two scans instead of one);
``mamba_ssm/ops/triton/mamba3/angle_dt.py`` (tanh x pi).
fla-org/flash-linear-attention ``fla/layers/mamba3.py`` wraps the same kernels (with A = -softplus
instead of the heavy-tail activation: the reference here is state-spaces/mamba's).

Deviations, for toy models: the head dimension is the model's (d_model / n_heads; Mamba-3: 64) and
N = 16 (Mamba-3: 128), as posbench's Mamba-2; the chunk is 64 tokens (as the reference). SISO only:
no MIMO (``is_mimo``), no output norm (``is_outproj_norm``, off by default there too). The kernels
run in float32 at least (the reference keeps bf16 inputs with float32 states).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from posbench.core.errors import PosbenchError
from posbench.core.params import one_of, param, positive
from posbench.mixers import register
from posbench.mixers.base import Mixer, inner_heads, inverse_softplus_dt, rms_norm
from posbench.mixers.mamba2 import ssd_chunked

TWO_PI = 2 * math.pi


def rotate_pairs(t: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """t [..., N] with (t_{2i}, t_{2i+1}) rotated by angles[..., i] for i < angles.shape[-1]; the other
    channels as they are (the reference's pairwise rotary)."""
    n = angles.shape[-1]
    pairs = t[..., : 2 * n].unflatten(-1, (n, 2))
    cos, sin = angles.cos(), angles.sin()
    first, second = pairs[..., 0], pairs[..., 1]
    turned = torch.stack([first * cos - second * sin, first * sin + second * cos], -1).flatten(-2)
    return torch.cat([turned, t[..., 2 * n:]], -1)


def zero_state(x: torch.Tensor, B: torch.Tensor, theta: torch.Tensor):
    """(angles [b, h, A], h [b, h, p, n], last rotated B [b, h, n], last x [b, h, p]): all zeros."""
    b, _, h, p = x.shape
    n = B.shape[-1]
    return x.new_zeros(b, h, theta.shape[-1]), x.new_zeros(b, h, p, n), x.new_zeros(b, h, n), x.new_zeros(b, h, p)


def mamba3_recurrent(x, dt, adt, lam, B, C, theta, initial_state=None, output_final_state=False):
    """The reference, one token at a time (the module docstring's recurrence). x: [b, L, h, p]; dt, adt
    (dt A), lam (lambda, in (0, 1)): [b, L, h]; B, C: [b, L, h, n] (normalised and biased, not rotated);
    theta: [b, L, h, A] the angle steps (dt pi tanh(.)) -> y [b, L, h, p] (without D x);
    ``initial_state`` (angles, h, B_prev, x_prev) or None (zeros); ``output_final_state``: (y, state)."""
    phi, h, k_prev, v_prev = zero_state(x, B, theta) if initial_state is None else initial_state
    out = []
    for t in range(x.shape[1]):
        phi = phi + theta[:, t]
        phi = phi - TWO_PI * torch.floor(phi / TWO_PI)
        k, q = rotate_pairs(B[:, t], phi), rotate_pairs(C[:, t], phi)  # [b, h, n]
        alpha = adt[:, t].exp()
        beta, gamma = (1 - lam[:, t]) * dt[:, t] * alpha, lam[:, t] * dt[:, t]  # [b, h]
        h = alpha[..., None, None] * h + beta[..., None, None] * v_prev[..., :, None] * k_prev[..., None, :] \
            + gamma[..., None, None] * x[:, t, ..., :, None] * k[..., None, :]
        out.append(torch.einsum("bhpn,bhn->bhp", h, q))
        k_prev, v_prev = k, x[:, t]
    y = torch.stack(out, dim=1) if out else x.new_zeros(x.shape)
    return (y, (phi, h, k_prev, v_prev)) if output_final_state else y


def mamba3_chunked(x, dt, adt, lam, B, C, theta, chunk: int = 64, initial_state=None, output_final_state=False):
    """The training form (module docstring): same arguments and result as ``mamba3_recurrent``; no
    Python loop. The recurrence is linear in its two inputs, so h = h' + h'': h' driven by gamma_t B_t
    x_t^T from the passed state, h'' by beta_t B_{t-1} x_{t-1}^T from zeros; both are one SSD scan (two
    batch rows each), and the sum is read by C."""
    b, L, H, P = x.shape
    phi0, h0, k_prev, v_prev = zero_state(x, B, theta) if initial_state is None else initial_state
    phi = theta.cumsum(1) + phi0[:, None]
    phi = phi - TWO_PI * torch.floor(phi / TWO_PI)  # [b, L, h, A]
    k, q = rotate_pairs(B, phi), rotate_pairs(C, phi)  # [b, L, h, n]
    k_before = torch.cat([k_prev[:, None].to(k.dtype), k[:, :-1]], 1)  # B_{t-1} (rotated); the state's before the first
    x_before = torch.cat([v_prev[:, None].to(x.dtype), x[:, :-1]], 1)  # x_{t-1}
    now = x * (lam * dt)[..., None]  # gamma_t x_t
    before = x_before * ((1 - lam) * dt * adt.exp())[..., None]  # beta_t x_{t-1}

    def fold(t):  # [b, L, h, ...] -> [b h, L, ...]: each head its own batch row (its own B and C)
        return t.transpose(1, 2).reshape(b * H, L, *t.shape[3:])

    X = torch.cat([fold(now), fold(before)])[:, :, None]  # [2 b h, L, 1, p]
    start = torch.cat([h0.reshape(b * H, 1, P, -1), torch.zeros_like(h0).reshape(b * H, 1, P, -1)])
    y, h = ssd_chunked(X, fold(adt).repeat(2, 1)[:, :, None], torch.cat([fold(k), fold(k_before)]),
                       fold(q).repeat(2, 1, 1), chunk, start, output_final_state=True)
    y = (y[: b * H] + y[b * H:])[:, :, 0].reshape(b, H, L, P).transpose(1, 2)
    h = (h[: b * H] + h[b * H:]).reshape(b, H, P, -1)
    final = (phi[:, -1], h, k[:, -1], x[:, -1]) if L else (phi0, h, k_prev, v_prev)
    return (y, final) if output_final_state else y


def heavy_tail(a: torch.Tensor) -> torch.Tensor:
    """The reference's ``heavy_tail_activation``: 1 + a for a >= 0, 1 / (1 - a) below (positive, smooth at 0)."""
    return a.clamp_min(0) + torch.reciprocal(1 - a.clamp_max(0))


@register("mamba3")
class Mamba3(Mixer):
    """Mamba-3's SISO layer (module docstring): u [B, L, D] -> [B, L, D]."""

    @dataclass
    class Params:
        expand: int = param(2, positive)  # inner width / d_model (Mamba-3: 2)
        head_dim: Optional[int] = param(None, positive)  # null: the model's d_model / n_heads (Mamba-3: 64)
        d_state: int = param(16, positive)  # N (Mamba-3: 128)
        rope_fraction: float = param(0.5, one_of(0.5, 1.0))  # the share of B and C's channels rotated (Mamba-3: 0.5)
        a_floor: float = param(1e-4, positive)  # |A| at least this (Mamba-3: 1e-4)
        chunk: int = param(64, positive)  # tokens per chunk of the training form (Mamba-3: 64)
        norm_eps: float = param(1e-5, positive)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        D = shape.d_model
        self.head_dim = params.head_dim or shape.head_dim
        self.d_inner, self.heads = inner_heads("mamba3", D, params.expand, self.head_dim)
        N = params.d_state
        self.angles = int(N * params.rope_fraction) // 2  # the reference: (N rope_fraction, rounded down to even) / 2
        if self.angles < 1:
            raise PosbenchError(f"mixer mamba3: d_state={N} x rope_fraction={params.rope_fraction} rotates no pair of "
                                "channels; use d_state >= 2 / rope_fraction")
        # z, x, B, C, dt, A, lambda, angles (the reference's order)
        self.in_proj = nn.Linear(D, 2 * self.d_inner + 2 * N + 3 * self.heads + self.angles, bias=False)
        self.dt_bias = nn.Parameter(inverse_softplus_dt(self.heads))
        self.B_bias = nn.Parameter(torch.ones(self.heads, N))
        self.C_bias = nn.Parameter(torch.ones(self.heads, N))
        self.B_norm = nn.Parameter(torch.ones(N))
        self.C_norm = nn.Parameter(torch.ones(N))
        self.D = nn.Parameter(torch.ones(self.heads))
        self.out_proj = nn.Linear(self.d_inner, D, bias=False)

    def forward_with_state(self, u, state, recurrent=False):
        """state: (angles [b, h, A], h [b, h, p, n], last rotated B [b, h, n], last x [b, h, p]) or None (zeros)."""
        b, L, _ = u.shape
        N, H, dtype = self.params.d_state, self.heads, torch.promote_types(u.dtype, torch.float32)
        z, x, B, C, dt, a, lam, angles = self.in_proj(u).to(dtype).split(
            [self.d_inner, self.d_inner, N, N, H, H, H, self.angles], -1)
        dt = F.softplus(dt + self.dt_bias)  # [b, L, h]
        adt = -heavy_tail(a).clamp_min(self.params.a_floor) * dt
        theta = (torch.tanh(angles) * math.pi)[:, :, None, :] * dt[..., None]  # [b, L, h, A]
        B = rms_norm(B, self.B_norm, self.params.norm_eps)[:, :, None, :] + self.B_bias  # [b, L, h, n]
        C = rms_norm(C, self.C_norm, self.params.norm_eps)[:, :, None, :] + self.C_bias
        x = x.view(b, L, H, self.head_dim)
        args = (x, dt, adt, lam.sigmoid(), B, C, theta)
        if recurrent:
            y, final = mamba3_recurrent(*args, initial_state=state, output_final_state=True)
        else:
            y, final = mamba3_chunked(*args, self.params.chunk, initial_state=state, output_final_state=True)
        y = (y + x * self.D.to(dtype)[:, None]).reshape(b, L, self.d_inner) * F.silu(z)
        return self.out_proj(y.to(u.dtype)), final
