"""Convolutional (local) positional encoding: a depthwise convolution over the sequence added to
the input, as in conditional positional encodings (Chu et al. 2021, CPE) and ConvBERT-style models.

    x_p <- x_p + sum_{t=0}^{k-1} w_t (.) x_{p-t}      (depthwise: one kernel per channel)

In a decoder the kernel must be causal: a centred kernel would let token p see p+1. The left-only
padding here makes it so. Position comes from local order (zero padding marks the start), not from
the position tensor, so the encoding is defined at any length.
"""

from dataclasses import dataclass

import torch.nn.functional as F
from torch import nn

from posbench.core.params import param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


@register("conv")
class Conv(PositionalEncoding):
    family, colour, order = "absolute / none", "#f7b6d2", 4  # the report's column, line colour and place in it

    @dataclass
    class Params:
        kernel_size: int = param(3, positive)

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.conv = nn.Conv1d(shape.d_model, shape.d_model, params.kernel_size, groups=shape.d_model, bias=True)
        nn.init.normal_(self.conv.weight, std=0.02)
        nn.init.zeros_(self.conv.bias)

    def embed(self, x, positions):
        h = F.pad(x.transpose(1, 2), (self.params.kernel_size - 1, 0))  # pad on the left only: causal
        return x + self.conv(h).transpose(1, 2)
