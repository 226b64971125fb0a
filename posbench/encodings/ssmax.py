"""SSMax (Scalable-Softmax; Nakanishi 2025, arXiv 2501.19399) on RoPE.

    softmax_j((s_h ln n) * z_ij),   z_ij = q_i . k_j / sqrt(d_h) (RoPE-rotated), n = keys query i sees

SSMax replaces softmax's base e by n (n^(s z) = e^(s ln n z)) so that the largest weight does not
fade as the context grows; s is learned per layer and head. Implemented, as the paper notes it
can be and as Llama 4 does for its temperature, by scaling the queries by s_h ln n (the
``query_scale`` hook); n = i + 1 in full causal attention (the window's count with one).
Paper followed: its definition (section 3) with one s per layer and head, from the first step of
training, with RoPE as in its experiments. No official code to compare with.

Deviations: s starts at 1 / ln(train_len) (``init_s: null``), so that at the last training position
the logits are those of plain softmax at initialisation; the paper's initial value is not taken
from it. s has no weight decay (it is an encoding parameter, like every learned position term).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn

from posbench.attention.temperatures import ssmax_scale
from posbench.core.params import param, positive
from posbench.encodings import register
from posbench.encodings.rope import RoPE


@register("ssmax")
class SSMax(RoPE):
    family, colour, order = "softmax / gate", "#6baed6", 0
    longrope = False  # LongRoPE's committed factors are searched on plain RoPE checkpoints, keyed by size only
    rope_scalable = True  # a RoPE model: the scalings change its frequencies, its temperature stays

    @dataclass
    class Params(RoPE.Params):
        init_s: Optional[float] = param(None, positive)  # null: 1 / ln(train_len)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        init = params.init_s if params.init_s is not None else 1.0 / math.log(max(2, shape.train_len))
        self.s = nn.Parameter(torch.full((shape.n_layers, shape.n_heads), float(init)))

    def query_scale(self, positions, keys_seen, layer):
        return ssmax_scale(self.s[layer], keys_seen)
