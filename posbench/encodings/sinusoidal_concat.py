"""Sinusoidal positions concatenated to the input instead of added (the add-vs-concat question;
e.g. Ke et al. 2021, "Rethinking Positional Encoding in Language Pre-training", Wang et al. 2021).

    x_p <- W [x_p ; PE(p)],  PE as in sinusoidal.py with d_pos channels,  W in R^{d x (d + d_pos)}

The projection W is needed to return to d_model. It starts as [I ; W_pos] with small W_pos, so the
model starts from NoPE plus a little position, and learns how much of each to mix.
"""

from dataclasses import dataclass

import torch
from torch import nn

from posbench.core.params import above, param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding
from posbench.encodings.sinusoidal import sinusoidal_table


@register("sinusoidal_concat")
class SinusoidalConcat(PositionalEncoding):
    family, colour, order = "absolute / none", "#c49c94", 2  # the report's column, line colour and place in it

    @dataclass
    class Params:
        d_pos: int = param(64, positive)
        base: float = param(10000.0, above(1))

    def __init__(self, shape, params):
        super().__init__(shape, params)
        d = shape.d_model
        self.proj = nn.Linear(d + params.d_pos, d, bias=False)
        with torch.no_grad():
            self.proj.weight.zero_()
            self.proj.weight[:, :d] = torch.eye(d)
            nn.init.normal_(self.proj.weight[:, d:], std=0.02 / params.d_pos ** 0.5)

    def embed(self, x, positions):
        table = sinusoidal_table(positions.cpu(), self.params.d_pos, self.params.base).to(x.device, x.dtype)
        return self.proj(torch.cat((x, table.expand(x.shape[0], -1, -1)), dim=-1))
