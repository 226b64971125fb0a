"""xPos: extrapolatable position embedding (Sun et al. 2022, "A Length-Extrapolatable Transformer").

RoPE plus an exponential decay of the logits with distance. With zeta_i = (2i/d + gamma) / (1 + gamma)
for each rotated pair i (gamma = 0.4) and scale base B, queries at position n are scaled by
zeta^(n/B) and keys at position m by zeta^(-m/B), so q_n . k_m gains the factor zeta^((n-m)/B):
a relative, decaying weight, strongest on the high-frequency pairs. Positions are centred before
the powers (the centring cancels in the product) so nothing overflows at long lengths.

Reference code followed: microsoft/torchscale, ``torchscale/component/xpos_relative_position.py``
(scale = (arange(0, d, 2) + 0.4 d) / 1.4 d, raised to the position / scale_base, scale_base 512).
Scaled to toy lengths: the paper trains at 1024 tokens with B = 512, so B defaults to train_len / 2.
At inference the paper uses blockwise causal attention (BCA); posbench evaluates xPos both without
it (row ``xpos``) and with it (row ``xpos+bca``, ``eval.bca``; see posbench/attention/kernels.py).
"""

from dataclasses import dataclass

import torch

from posbench.core.params import above, at_least, param, positive
from posbench.encodings import register
from posbench.encodings.rope import RoPE, apply_rotation


@register("xpos")
class XPos(RoPE):
    family, colour, order = "rotary", "#17becf", 5  # the report's column, line colour and place in it

    @dataclass
    class Params:
        base: float = param(10000.0, above(1))
        gamma: float = param(0.4, at_least(0))  # 0 is meaningful here
        scale_base: float | None = param(None, positive)  # None: train_len / 2 (the paper: 512 at training length 1024)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.scale_base = params.scale_base or shape.train_len / 2
        d = shape.head_dim
        zeta = (torch.arange(0, d, 2, dtype=torch.float64) / d + params.gamma) / (1 + params.gamma)
        self.zeta = torch.cat((zeta, zeta))  # same factor for both halves of a rotated pair

    rope_scalable = False  # the RoPE scalings are for plain RoPE only

    def prepare(self, positions, options):
        cos, sin, attention_scale = super().prepare(positions, options)
        rel = (positions - positions.float().mean().round().long()).to(torch.float64)
        scale = (self.zeta.to(positions.device)[None, :] ** (rel[:, None] / self.scale_base)).float()
        return cos, sin, scale, attention_scale

    def rotate(self, q, k, state):
        cos, sin, scale = state[:3]
        return apply_rotation(q, cos * scale, sin * scale), apply_rotation(k, cos / scale, sin / scale)
