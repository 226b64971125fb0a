"""FIRE: functional interpolation for relative positions (Li et al. 2023).

    b[h, i, j] = f_theta( psi(i - j) / psi(max(L, i)) )[h],   psi(x) = log(c x + 1)

f_theta is a small MLP (1 -> width -> heads), c > 0 and the threshold L > 0 are learned. Dividing
by psi(max(L, i)) maps every query's distances into [0, 1] ("progressive interpolation"), so a
query at a position never seen in training still sees inputs in the range f was trained on. Not
translation invariant: the normaliser depends on the query's own position i. One FIRE per layer.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


def inverse_softplus(y: float) -> torch.Tensor:
    """x with softplus(x) = y, written as y + log(1 - e^-y) so it does not overflow for large y
    (log(e^y - 1) is inf in float32 from y ~ 89, e.g. L = a training length of 128)."""
    y = torch.tensor(float(y), dtype=torch.float64)
    return (y + torch.log(-torch.expm1(-y))).float()


class _FireLayer(nn.Module):
    def __init__(self, n_heads: int, width: int, init_c: float, init_L: float):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(1, width), nn.ReLU(), nn.Linear(width, n_heads))
        # c and L are stored through softplus^-1 so they stay positive whatever the optimiser does
        self.c_raw = nn.Parameter(inverse_softplus(init_c))
        self.L_raw = nn.Parameter(inverse_softplus(init_L))

    def forward(self, q_pos, k_pos):
        c, L = F.softplus(self.c_raw), F.softplus(self.L_raw)
        psi = lambda x: torch.log1p(c * x)  # noqa: E731
        dist = (q_pos[:, None] - k_pos[None, :]).clamp(min=0).float()
        norm = psi(torch.maximum(q_pos.float(), L))[:, None]
        return self.mlp((psi(dist) / norm)[..., None]).permute(2, 0, 1)


@register("fire")
class Fire(PositionalEncoding):
    uses_bias = True

    @dataclass
    class Params:
        mlp_width: int = 32
        init_c: float = 0.1
        init_L: float | None = None  # None: the training length

    def __init__(self, shape, params):
        super().__init__(shape, params)
        init_L = float(params.init_L or shape.train_len)
        self.layers = nn.ModuleList(_FireLayer(shape.n_heads, params.mlp_width, params.init_c, init_L) for _ in range(shape.n_layers))

    def bias(self, q_pos, k_pos, layer):
        return self.layers[layer](q_pos, k_pos)
