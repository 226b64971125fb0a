"""Attention kernels. The model picks one from the hooks its encoding declares:

* no bias, no relative terms -> ``F.scaled_dot_product_attention(is_causal=True)``, the fast path;
* score bias                 -> ``biased_causal_attention``: SDPA with a float mask, built for one
  block of queries at a time so that heads x L x L is never held for a whole long sequence;
* relative content terms     -> the encoding's own ``relative_attention``.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

BiasFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

# Largest score block (batch x heads x queries x keys) materialised at once: 2^24 floats = 64 MiB.
MAX_SCORE_ELEMENTS = 1 << 24


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)


def biased_causal_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    bias_fn: BiasFn,
    positions: torch.Tensor,
    scale: float | None = None,
    max_elements: int = MAX_SCORE_ELEMENTS,
) -> torch.Tensor:
    """Causal attention with logits q.k * scale + bias_fn(h, pos_i, pos_j), chunked over queries.

    Causality is by index (j <= i), not by position value, so randomized or interpolated positions
    keep the mask right. SDPA refuses a float mask together with ``is_causal``, so the -inf causal
    part is folded into the bias.
    """
    B, H, L, _ = q.shape
    heads = torch.arange(H, device=q.device)[:, None, None]
    chunk = max(1, min(L, max_elements // max(1, B * H * L)))
    out = []
    for start in range(0, L, chunk):
        end = min(L, start + chunk)
        q_idx = torch.arange(start, end, device=q.device)[:, None]
        k_idx = torch.arange(end, device=q.device)[None, :]
        bias = bias_fn(heads, positions[start:end][None, :, None], positions[:end][None, None, :])
        bias = bias.masked_fill(k_idx > q_idx, float("-inf")).to(q.dtype)
        out.append(F.scaled_dot_product_attention(q[:, :, start:end], k[:, :, :end], v[:, :, :end], attn_mask=bias, scale=scale))
    return out[0] if len(out) == 1 else torch.cat(out, dim=2)
