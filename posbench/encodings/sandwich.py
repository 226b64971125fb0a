"""Sandwich (Chi et al. 2023, "Dissecting Transformer Length Extrapolation via the Lens of
Receptive Field Analysis"): the parameter-free bias left when the sinusoidal embeddings' cross
terms are dropped and only their inner product p_i . p_j is kept:

    b[h, i, j] = sum_{k=0}^{d'/2-1} cos( (i - j) / rho_h * 10000^(-2k/d') ) - d'/2

with d' = 128 and, as with ALiBi's slopes, a per-head compression rho_h = 8 (h + 1) / H. The
constant -d'/2 (which softmax ignores) makes the bias 0 on the diagonal. The inner product decays
roughly logarithmically with distance before it flattens, the shape KERPLE and T5 learn.
"""

from dataclasses import dataclass

import torch

from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


@register("sandwich")
class Sandwich(PositionalEncoding):
    uses_bias = True
    translation_invariant = True

    @dataclass
    class Params:
        d_sandwich: int = 128
        base: float = 10000.0

    def __init__(self, shape, params):
        super().__init__(shape, params)
        H = shape.n_heads
        self.inv_freq = params.base ** (-torch.arange(0, params.d_sandwich, 2, dtype=torch.float64) / params.d_sandwich)
        self.compression = torch.tensor([8.0 * (h + 1) / H for h in range(H)], dtype=torch.float64)

    def bias(self, q_pos, k_pos, layer):
        dist = (q_pos[:, None] - k_pos[None, :]).clamp(min=0)
        # a function of distance only: evaluate it once per distance, then index (no H x L x L x d')
        d = torch.arange(int(dist.max()) + 1, device=dist.device, dtype=torch.float64)
        angles = d[None, :, None] / self.compression.to(d.device)[:, None, None] * self.inv_freq.to(d.device)
        table = (angles.cos().sum(-1) - self.inv_freq.numel()).float()  # [H, max distance + 1]
        return table[:, dist]
