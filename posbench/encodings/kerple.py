"""KERPLE: kernelized relative positional embedding (Chi et al. 2022), two conditionally positive
definite kernels turned into logit biases, with learned per-layer, per-head parameters:

    kerple_log:    b[h, i, j] = -r1_h * log(1 + r2_h * |i - j|),   r1, r2 > 0
    kerple_power:  b[h, i, j] = -r1_h * |i - j| ^ r2_h,            r1 > 0, 0 < r2 <= 2

Both are 0 on the diagonal and decrease with distance. The parameters are kept in their valid
ranges by clamping (at 1e-2, and 2 for the power's exponent) where they are used, so the optimiser
moves freely and the bias is always a valid kernel.
"""

from dataclasses import dataclass

import torch
from torch import nn

from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding

EPS = 1e-2


class _Kerple(PositionalEncoding):
    uses_bias = True
    translation_invariant = True

    @dataclass
    class Params:
        init_r1: float = 1.0  # initial values (uniform on (0, init] per head and layer)
        init_r2: float = 2.0

    def __init__(self, shape, params):
        super().__init__(shape, params)
        size = (shape.n_layers, shape.n_heads)
        self.r1 = nn.Parameter(torch.rand(size) * params.init_r1)
        self.r2 = nn.Parameter(torch.rand(size) * params.init_r2)

    def distance(self, q_pos, k_pos):
        return (q_pos[:, None] - k_pos[None, :]).clamp(min=0).float()


@register("kerple_log")
class KerpleLog(_Kerple):
    def bias(self, q_pos, k_pos, layer):
        r1, r2 = self.r1[layer].clamp(min=EPS), self.r2[layer].clamp(min=EPS)
        return -r1[:, None, None] * torch.log1p(r2[:, None, None] * self.distance(q_pos, k_pos))


@register("kerple_power")
class KerplePower(_Kerple):
    def bias(self, q_pos, k_pos, layer):
        r1, r2 = self.r1[layer].clamp(min=EPS), self.r2[layer].clamp(EPS, 2.0)
        d = self.distance(q_pos, k_pos)
        # d^r2 at d = 0 has a NaN gradient in r2 (0 * log 0): compute on d >= 1, then put the 0 back
        safe = torch.where(d > 0, d, torch.ones_like(d))
        return -r1[:, None, None] * torch.where(d > 0, safe ** r2[:, None, None], torch.zeros_like(safe))
