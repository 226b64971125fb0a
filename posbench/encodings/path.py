"""PaTH attention (Yang, Shen, Wen, Tan, Mishra, Ren, Panda & Kim 2025, NeurIPS; arXiv 2505.16381,
"PaTH Attention: Position Encoding via Accumulating Householder Transformations").

Position enters as a data-dependent transform between key and query instead of RoPE's fixed rotation:

    w_t    = l2norm(silu(causal_conv3(W_up W_down x_t)))          (per head; low-rank, rank 32)
    beta_t = 2 sigmoid(b . x_t + b_0)                             (per head: eigenvalue 1 - beta in (-1, 1))
    H_t    = I - beta_t w_t w_t^T
    logit_ij = q_i^T H_i H_{i-1} ... H_{j+1} k_j / sqrt(d_h)      (j < i; q_i . k_i / sqrt(d_h) on the diagonal)

Reference code: flash-linear-attention ``fla/layers/path_attn.py`` (``PaTHAttention``: ``w_proj`` =
Linear(d, 32) then Linear(32, d) (``use_low_rank_w``), ``ShortConvolution(kernel_size=3, bias=False,
activation='silu')`` on w (``use_w_shortconv``), ``l2_norm(w)``, ``beta = bt_proj(x).sigmoid() * 2``,
``bt_proj = Linear(d, heads, bias=True)``, no QK-norm by default) and ``fla/ops/path_attn/naive.py``
(``naive_path_attn``, MIT: the chunked algorithm posbench/attention/householder.py follows; the
tests run a copy of it). FLA initialises its Linear and Conv1d weights N(0, 0.02) with zero biases,
so beta starts at 1.

The logits come through the ``content_bias`` hook (one block of queries at a time, from the layer's
input and its q, k), as the correction q_i^T (H_i ... H_{j+1} - I) k_j / sqrt(d_h) added to the
kernel's q.k scores; no Python loop over tokens, one over chunks of 64 tokens (one chunk at the
default train_len 64). Cost: the per-chunk quantities are O(L (C + D)) per head; each block of
queries holds its [B, H, queries, keys] logits, as softmax attention's scores do, so 16x evaluation
(1024 tokens) runs on CPU at the small model through masked_attention's blocks of queries.

Deviations: an attention-temperature row (``+temp``: logit_scale) scales q.k and not the Householder
correction (as FoX's forget term); a query temperature (``+logn``) scales q and so the whole logit.
The encoding's parameters (w and beta projections, the conv) train without weight decay
(encoding parameters). Plain PyTorch, not FLA's Triton kernel.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from posbench.attention.householder import householder_chunks, householder_logits
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding

CHUNK = 64  # the reference's chunk_size; the result does not depend on it (tested)
W_RANK = 32  # FLA's low-rank w_proj
W_CONV = 3  # FLA's conv_size


class HouseholderVectors(nn.Module):
    """One layer's w_t [B, H, L, Dh] (unit norm) and beta_t [B, H, L] from its input x [B, L, D]."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.w_down = nn.Linear(d_model, W_RANK, bias=False)
        self.w_up = nn.Linear(W_RANK, d_model, bias=False)
        self.conv = nn.Conv1d(d_model, d_model, W_CONV, groups=d_model, bias=False)  # depthwise, as ShortConvolution
        self.beta = nn.Linear(d_model, n_heads, bias=True)
        for m in (self.w_down, self.w_up, self.conv, self.beta):
            nn.init.normal_(m.weight, std=0.02)
        nn.init.zeros_(self.beta.bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, L, D = x.shape
        w = self.w_up(self.w_down(x)).transpose(1, 2)
        w = F.silu(self.conv(F.pad(w, (W_CONV - 1, 0))))  # left padding only: causal
        dtype = torch.promote_types(x.dtype, torch.float32)  # as the reference: w and beta in float32 at least
        w = F.normalize(w.transpose(1, 2).reshape(B, L, self.n_heads, -1).to(dtype), dim=-1).transpose(1, 2)
        beta = 2 * torch.sigmoid(self.beta(x).to(dtype)).transpose(1, 2)
        return w, beta


@register("path")
class PaTH(PositionalEncoding):
    family, colour, order = "data-dependent", "#54278f", 1
    translation_invariant = True  # no position enters at all: only the tokens between key and query
    chunk = CHUNK

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.householder = nn.ModuleList(HouseholderVectors(shape.d_model, shape.n_heads) for _ in range(shape.n_layers))

    def content_bias(self, x, q, k, layer):
        w, beta = self.householder[layer](x)
        chunks = householder_chunks(q, k, w, beta, self.chunk)
        scale = self.shape.head_dim ** -0.5

        def path(scores, start, end, lo, hidden):
            dtype = chunks.local.dtype
            plain = q[:, :, start:end].to(dtype) @ k[:, :, lo:end].to(dtype).transpose(-1, -2)
            return scores + ((householder_logits(chunks, start, end, lo) - plain) * scale).to(scores.dtype)

        return path
