"""FIRE: functional interpolation for relative positions (Li et al. 2023, arXiv 2310.04418, eq. (3)).

    b[h, i, j] = f_theta( psi(i - j) / psi(max(L, i)) )[h],   psi(x) = log(c x + 1)

f_theta is a small MLP (1 -> width -> heads, ReLU), c > 0 and the threshold L > 0 are learned.
Dividing by psi(max(L, i)) maps every query's distances into [0, 1] ("progressive
interpolation"): a query past L sees its distances rescaled to the range f was trained on.

Followed: the PyTorch listing in the paper's appendix: ``|c|`` with c initialised to 0.1;
``L = |L_multiplier * init_L|`` with a learned ``L_multiplier`` initialised to 1 (so a plain
learning rate moves L by init_L per unit step: the threshold adapts during training), init_L 512
for a training length of 2048, and 1e-6 added to the normaliser. Scaled honestly to toy lengths:
``init_L`` defaults to train_len / 4 (512 / 2048), so the normaliser varies over training queries
past train_len / 4, as in the paper, instead of being the same constant for every training query.

Deviations: one FIRE per layer (the paper's sharing across layers was not checked against code
here); the previous posbench setting (L = train_len, softplus-parameterised) is available as an
ablation: ``encoding.init_L=<train_len>``.
"""

from dataclasses import dataclass

import torch
from torch import nn

from posbench.core.params import param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding

NORM_EPS = 1e-6


class _FireLayer(nn.Module):
    def __init__(self, n_heads: int, width: int, init_c: float, init_L: float):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(1, width), nn.ReLU(), nn.Linear(width, n_heads))
        self.c = nn.Parameter(torch.tensor(float(init_c)))
        self.init_L = init_L  # a constant: L is learned through its multiplier
        self.L_multiplier = nn.Parameter(torch.tensor(1.0))

    def threshold(self) -> torch.Tensor:
        return (self.L_multiplier * self.init_L).abs()

    def forward(self, q_pos, k_pos):
        c = self.c.abs()
        psi = lambda x: torch.log1p(c * x)  # noqa: E731
        dist = (q_pos[:, None] - k_pos[None, :]).clamp(min=0).float()
        norm = psi(torch.maximum(q_pos.float(), self.threshold()))[:, None] + NORM_EPS
        return self.mlp((psi(dist) / norm)[..., None]).permute(2, 0, 1)


@register("fire")
class Fire(PositionalEncoding):
    family, colour, order = "score bias", "#c5b0d5", 5  # the report's column, line colour and place in it

    @dataclass
    class Params:
        mlp_width: int = param(32, positive)
        init_c: float = param(0.1, positive)
        init_L: float | None = param(None, positive)  # None: train_len / 4 (the paper: 512 at training length 2048)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        init_L = float(params.init_L or max(1.0, shape.train_len / 4))
        self.layers = nn.ModuleList(_FireLayer(shape.n_heads, params.mlp_width, params.init_c, init_L) for _ in range(shape.n_layers))

    def bias(self, q_pos, k_pos, layer):
        return self.layers[layer](q_pos, k_pos)
