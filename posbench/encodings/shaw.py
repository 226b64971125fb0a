"""Relation-aware self-attention (Shaw, Uszkoreit & Vaswani 2018).

Learned relative embeddings on keys and values, indexed by the clipped distance
d = clip(i - j, 0, k) (causal: only j <= i), one table per layer, shared by the heads:

    e_ij = q_i . (k_j + a^K_d) / sqrt(d_h),      z_i = sum_j softmax(e)_ij (v_j + a^V_d)

Distances beyond k share one embedding (k = 16 in the paper's base model). Runs on the relative
attention path (posbench.attention.kernels.relative_causal_attention), never building L x L x d_h.
"""

from dataclasses import dataclass

import torch
from torch import nn

from posbench.attention.kernels import CPU_FLASH_LSE, clipped_relative_attention, relative_causal_attention
from posbench.core.params import at_least, param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


@register("shaw")
class Shaw(PositionalEncoding):
    family, colour, order = "relative (content)", "#bcbd22", 0  # the report's column, line colour and place in it
    integer_positions = True  # a table indexed by position or distance: real-valued positions are refused
    translation_invariant = True

    @dataclass
    class Params:
        max_distance: int = param(16, positive)  # k: distances are clipped to [0, k]
        init_std: float = param(0.02, at_least(0))  # 0 is meaningful here

    def __init__(self, shape, params):
        super().__init__(shape, params)
        size = (shape.n_layers, params.max_distance + 1, shape.head_dim)
        self.rel_k = nn.Parameter(torch.randn(size) * params.init_std)
        self.rel_v = nn.Parameter(torch.randn(size) * params.init_std)

    def relative_attention(self, q, k, v, positions, layer, options):
        if CPU_FLASH_LSE and q.device.type == "cpu" and not torch.is_grad_enabled() and options.block is None and options.window is None \
                and torch.equal(positions, torch.arange(len(positions))):
            # evaluation on CPU: far keys share rel_k[k], one SDPA call; the k nearer ones a band
            return clipped_relative_attention(q, k, v, self.rel_k[layer][None].to(q.dtype), self.rel_v[layer].to(q.dtype),
                                              self.relative_scale(options))
        return relative_causal_attention(
            q, k, v, positions, rel_q=q, rel_k=self.rel_k[layer][None].to(q.dtype), rel_v=self.rel_v[layer].to(q.dtype),
            block=options.block, scale=self.relative_scale(options), window=options.window,
        )
