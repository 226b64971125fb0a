"""CoPE, contextual position encoding (Golovneva et al. 2024, "Learning to Count What's Important").

    g_ij = sigmoid(q_i . k_j / sqrt(d_h))  for j <= i (0 otherwise)
    p_ij = sum_{t=j}^{i} g_it              (positions count the keys the gates open), clamped at npos - 1
    e_ij = (1 - w) q_i . E[floor p_ij] + w q_i . E[ceil p_ij],   w = p_ij - floor p_ij
    logit_ij = (q_i . k_j + e_ij) / sqrt(d_h)

No other position encoding. Reference code: facebookresearch/RAM ``projects/cope/src/cope/
context_position.py`` (``ContextPosSelfAttn``, defaults: gates from the keys themselves,
``npos = block_size + 1``, ``pos_emb`` of shape [1, head_dim, npos] initialised to zeros and shared
by the heads of a layer, position logits added before the division by sqrt(d_h)).

Computed per block of queries (the ``content_bias`` hook, a ``CountedPositions``): gates, counted
positions and the interpolated logits for that block's [B, H, c, e] scores, and q . E for the npos
integer positions. Past the training length the counted positions reach npos - 1 and are clamped
there, as the reference does, so CoPE scores every length (nothing is undefined). Deviation: npos =
train_len + 1 (the reference's default, its block size being its training length); the embeddings
have no weight decay (encoding parameters).

Evaluation on CPU (``CountedPositions.band_attention``, the ``BAND`` kernel of
posbench/model/kernel_choice.py): p_ij only grows as j moves away from i, so behind some key every
pair of a block of queries is clamped and its term is the constant q_i . E[npos - 1] of the query.
Those keys are one SDPA call (the constant added to its log-sum-exp); only the band of nearer keys,
found from the gates themselves, is computed pair by pair. Same numbers, to float tolerance; how
many keys the band holds depends on the gates (about 2 (npos - 1) where they are near 1/2, the whole
prefix where they stay near 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from posbench.attention.kernels import cpu_flash_attention, hide
from posbench.core.params import param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding

BAND_QUERIES = 64  # queries per block of the band path: the band spans the block and the keys before it


def counted_positions(scores: torch.Tensor, hidden: torch.Tensor, npos: int) -> torch.Tensor:
    """p_ij = sum_{t=j}^{i} sigmoid(scores_it), clamped at npos - 1, for scores [B, H, c, e] (keys in
    order), ``hidden`` [c, e] pairs that count nothing."""
    gates = hide(torch.sigmoid(scores), hidden, 0.0)
    return gates.flip(-1).cumsum(-1).flip(-1).clamp(max=npos - 1)


def interpolated(fixed: torch.Tensor, steps: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """e = fixed[floor p] + w (fixed[floor p + 1] - fixed[floor p]), w = p - floor p: the reference's
    (1 - w) fixed[floor] + w fixed[ceil] with one index (p >= 0: truncation is floor) and ``steps``
    [.., npos] = fixed[p + 1] - fixed[p] (0 at npos - 1, where p is clamped); w keeps its gradient."""
    index = positions.long()
    return torch.addcmul(fixed.gather(-1, index), positions.frac(), steps.gather(-1, index))


def position_steps(fixed: torch.Tensor) -> torch.Tensor:
    """fixed[.., p + 1] - fixed[.., p], with 0 after the last position."""
    return F.pad(fixed.diff(dim=-1), (0, 1))


def cope_logits(scores: torch.Tensor, q: torch.Tensor, pos_emb: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """CoPE's position logits e_ij (before the division by sqrt(d_h)) for scores q.k / sqrt(d_h)
    [B, H, c, e], queries q [B, H, c, Dh], embeddings [Dh, npos], ``hidden`` [c, e] pairs masked out."""
    fixed = q @ pos_emb.to(q.dtype)  # [B, H, c, npos]
    return interpolated(fixed, position_steps(fixed), counted_positions(scores, hidden, pos_emb.shape[-1]))


@dataclass(frozen=True)
class CountedPositions:
    """CoPE's term for one layer: a ``ScoreMod`` (posbench.attention.kernels) for the explicit kernel,
    and ``band_attention``, the whole attention for evaluation on CPU."""

    q: torch.Tensor  # [B, H, L, Dh]
    pos_emb: torch.Tensor  # [Dh, npos]

    def __call__(self, scores, start, end, lo, hidden):
        # scores = q.k * scale: CoPE's gate logits; its position term is added before the scale
        scale = self.q.shape[-1] ** -0.5
        return scores + cope_logits(scores, self.q[:, :, start:end], self.pos_emb, hidden) * scale

    @torch.no_grad()
    def band_attention(self, k: torch.Tensor, v: torch.Tensor, scale: float | None = None,
                       block: int = BAND_QUERIES) -> torch.Tensor:
        """softmax(q.k * scale + e * 1/sqrt(d_h)) v over causal keys, q [B, H, L, Dh] (self.q) ->
        [B, H, L, Dh], one block of queries [s, s + c) at a time: keys [lo, s + c) explicitly (the band),
        keys [0, lo) through one SDPA call, lo chosen so that p_i,lo >= npos - 1 for every query of the
        block (then every earlier key is clamped too: gates are >= 0), merged by log-sum-exp:

            out_i = (e^{lse_i + c_i} y_i + sum_{band} e^{l_ij} v_j) / (e^{lse_i + c_i} + sum_{band} e^{l_ij}),
            c_i = q_i . E[npos - 1] / sqrt(d_h)

        The band's scores are computed against the keys in reverse order, so that p is a plain
        cumulative sum (no flips). Inference only; CPU (the flash kernel that returns lse)."""
        B, H, L, Dh = self.q.shape
        scale = Dh ** -0.5 if scale is None else scale
        top = self.pos_emb.shape[-1] - 1
        q = self.q
        # E / sqrt(d_h) (CoPE's term is divided by it) and its steps E[p + 1] - E[p], side by side: one
        # matmul per block gives q . E and the steps (a [B, H, L, npos] table for all queries would cost
        # as much memory traffic as the band)
        emb = self.pos_emb.to(q.dtype) * Dh ** -0.5
        tables = torch.cat((emb, position_steps(emb)), -1)  # [Dh, 2 npos]
        q_scaled, k_rev, v_rev = q * scale, k.flip(-2), v.flip(-2)  # key j at L - 1 - j
        out = torch.empty_like(q)
        reach = top  # keys before a block that its band spans: at least npos - 1 (gates are < 1)
        for s in range(0, L, block):
            e = min(L, s + block)
            c, lo = e - s, max(0, s - reach)
            q_block = q_scaled[:, :, s:e]
            z = q_block @ k_rev[:, :, L - e:L - lo].transpose(-1, -2)  # [B, H, c, n], column t: key e - 1 - t
            hidden = torch.arange(c)[None, :] < (c - 1) - torch.arange(c)[:, None]  # the future, in the first c columns
            gates = torch.sigmoid(z)
            gates[..., :c].masked_fill_(hidden, 0.0)
            p = gates.cumsum_(-1)  # p_ij, j = e - 1 - t: nondecreasing in t
            while lo > 0 and bool((p[..., -1] < top).any()):  # some query of the block still counts at lo: widen
                new_lo = max(0, lo - max(block, reach // 2))
                z_more = q_block @ k_rev[:, :, L - lo:L - new_lo].transpose(-1, -2)
                p_more = torch.sigmoid(z_more).cumsum_(-1).add_(p[..., -1:])  # keys before s: all visible
                z, p, lo = torch.cat((z, z_more), -1), torch.cat((p, p_more), -1), new_lo
            # the next block starts from what this one needed: the columns up to the first clamped for every query
            needed = int(torch.searchsorted(p, torch.full(p.shape[:-1] + (1,), float(top), dtype=p.dtype)).max()) + 1
            fixed = q[:, :, s:e] @ tables  # [B, H, c, 2 npos]: q_i . E[p] / sqrt(d_h), then the steps
            logits = interpolated(fixed[..., :top + 1], fixed[..., top + 1:], p.clamp_(max=top)).add_(z)
            logits[..., :c].masked_fill_(hidden, float("-inf"))
            v_band = v_rev[:, :, L - e:L - lo]
            if lo == 0:
                out[:, :, s:e] = logits.softmax(-1) @ v_band
            else:
                y_far, lse = cpu_flash_attention(q[:, :, s:e], k[:, :, :lo], v[:, :, :lo], scale)
                lse = lse + fixed[..., top]  # the term of every clamped pair
                peak = torch.maximum(logits.amax(-1), lse)  # [B, H, c]
                weights, far = logits.sub_(peak[..., None]).exp_(), (lse - peak).exp_()
                out[:, :, s:e] = (weights @ v_band + far[..., None] * y_far) / (weights.sum(-1) + far)[..., None]
            reach = max(top, needed - c)
        return out


@register("cope")
class CoPE(PositionalEncoding):
    family, colour, order = "data-dependent", "#fdae6b", 1
    content_has_band = True

    @dataclass
    class Params:
        npos: Optional[int] = param(None, positive)  # null: train_len + 1 (the reference's block_size + 1)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.npos = params.npos or shape.train_len + 1
        self.pos_emb = nn.Parameter(torch.zeros(shape.n_layers, shape.head_dim, self.npos))

    def content_bias(self, x, q, k, layer):
        return CountedPositions(q, self.pos_emb[layer])
