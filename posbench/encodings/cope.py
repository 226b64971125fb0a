"""CoPE, contextual position encoding (Golovneva et al. 2024, "Learning to Count What's Important").

    g_ij = sigmoid(q_i . k_j / sqrt(d_h))  for j <= i (0 otherwise)
    p_ij = sum_{t=j}^{i} g_it              (positions count the keys the gates open), clamped at npos - 1
    e_ij = (1 - w) q_i . E[floor p_ij] + w q_i . E[ceil p_ij],   w = p_ij - floor p_ij
    logit_ij = (q_i . k_j + e_ij) / sqrt(d_h)

No other position encoding. Reference code: facebookresearch/RAM ``projects/cope/src/cope/
context_position.py`` (``ContextPosSelfAttn``, defaults: gates from the keys themselves,
``npos = block_size + 1``, ``pos_emb`` of shape [1, head_dim, npos] initialised to zeros and shared
by the heads of a layer, position logits added before the division by sqrt(d_h)).

Computed per block of queries (the ``content_bias`` hook): gates, counted positions and the
interpolated logits for that block's [B, H, c, e] scores, and q . E for the npos integer positions.
Past the training length the counted positions reach npos - 1 and are clamped there, as the
reference does, so CoPE scores every length (nothing is undefined). Deviation: npos = train_len + 1
(the reference's default, its block size being its training length); the embeddings have no
weight decay (encoding parameters).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from posbench.core.params import param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


def cope_logits(scores: torch.Tensor, q: torch.Tensor, pos_emb: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """CoPE's position logits e_ij (before the division by sqrt(d_h)) for scores q.k / sqrt(d_h)
    [B, H, c, e], queries q [B, H, c, Dh], embeddings [Dh, npos], ``hidden`` [c, e] pairs masked out."""
    npos = pos_emb.shape[-1]
    gates = torch.sigmoid(scores).masked_fill(hidden, 0.0)
    positions = gates.flip(-1).cumsum(-1).flip(-1).clamp(max=npos - 1)
    fixed = q @ pos_emb.to(q.dtype)  # [B, H, c, npos]
    floor, ceil = positions.floor().long(), positions.ceil().long()
    w = positions - floor  # differentiable, as in the reference
    return fixed.gather(-1, ceil) * w + fixed.gather(-1, floor) * (1 - w)


@register("cope")
class CoPE(PositionalEncoding):
    family, colour, order = "data-dependent", "#fdae6b", 1

    @dataclass
    class Params:
        npos: Optional[int] = param(None, positive)  # null: train_len + 1 (the reference's block_size + 1)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.npos = params.npos or shape.train_len + 1
        self.pos_emb = nn.Parameter(torch.zeros(shape.n_layers, shape.head_dim, self.npos))

    def content_bias(self, x, q, k, layer):
        emb = self.pos_emb[layer]

        def counted(scores, start, end, lo, hidden):
            # scores = q.k * scale: CoPE's gate logits; its position term is added before the scale
            scale = q.shape[-1] ** -0.5
            return scores + cope_logits(scores, q[:, :, start:end], emb, hidden) * scale

        return counted
