"""Attention temperatures by position or by number of keys: the factor multiplying a layer's queries
(after rotation), so that every logit q.k scales by it. Each takes the query positions [L] and the
number of keys each query sees [L] (i + 1, or fewer in a window) and returns [L] (SSMax: [H, L]).

* ``logn_scale``      Qwen-1's logn attention (``use_logn_attn``, modeling_qwen.py): log_T(n) for
                      n > T, 1 otherwise, n the query's index + 1 and T the training length.
* ``floor_log_scale`` Llama 4's temperature tuning of its NoPE layers (HF
                      ``models/llama4/modeling_llama4.py``, ``Llama4TextAttention``):
                      1 + beta * ln(1 + floor((pos + 1) / floor_scale)).
* ``ssmax_scale``     Scalable-Softmax (Nakanishi 2025, arXiv 2501.19399): s_h * ln n, s learned
                      per layer and head, n the number of keys the query sees.
"""

from __future__ import annotations

import math

import torch


def logn_scale(positions: torch.Tensor, keys_seen: torch.Tensor, train_len: int) -> torch.Tensor:
    """Qwen: ``logn_list = [log(i, seq_length) if i > seq_length else 1 for i in 1..]`` indexed by the
    query's index + 1 (not its window-limited key count: Qwen's n is the sequence length so far)."""
    n = torch.arange(1, len(positions) + 1, device=positions.device, dtype=torch.float64)
    return torch.where(n > train_len, n.log() / math.log(train_len), torch.ones_like(n)).float()


def floor_log_scale(positions: torch.Tensor, keys_seen: torch.Tensor, floor_scale: float, beta: float) -> torch.Tensor:
    """Llama 4: ``log1p(floor((cache_position + 1) / floor_scale)) * attn_scale + 1``, by position."""
    return (torch.log1p(torch.floor((positions.to(torch.float64) + 1.0) / floor_scale)) * beta + 1.0).float()


def ssmax_scale(s: torch.Tensor, keys_seen: torch.Tensor) -> torch.Tensor:
    """SSMax: [H] learned s times ln n for each query's n keys -> [H, L]."""
    return s[:, None] * keys_seen.to(s.dtype).log()[None, :]
