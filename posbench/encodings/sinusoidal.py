"""Sinusoidal absolute positions added to the input (Vaswani et al. 2017, "Attention Is All You Need").

    PE[p, 2i]   = sin(p / base^(2i / d))
    PE[p, 2i+1] = cos(p / base^(2i / d))

interleaved as in the paper (sin on even, cos on odd channels), base = 10000, and added to the
token embeddings as x + scale * PE. The paper adds PE to token embeddings multiplied by sqrt(d),
whose entries are then of order 1, like PE's. Our token embeddings keep GPT-2's init (std 0.02), so
the table is scaled by the same 0.02 to keep the paper's token-to-position ratio; unscaled, the
table swamps the tokens and the model trains markedly worse even at the training length.

The table is computed from the position tensor on every call, so it is defined at any length;
what breaks past the training length is the model, not the formula.
"""

from dataclasses import dataclass

import torch

from posbench.core.params import above, at_least, param
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


def sinusoidal_table(num_positions: int | torch.Tensor, dim: int, base: float = 10000.0) -> torch.Tensor:
    """[num_positions, dim] table of the original Transformer (positions 0..n-1, or given positions)."""
    if dim % 2:
        raise ValueError(f"sinusoidal dim must be even, got {dim}")
    pos = torch.arange(num_positions) if isinstance(num_positions, int) else num_positions
    inv_freq = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = pos.to(torch.float64)[:, None] * inv_freq[None, :]
    table = torch.empty(angles.shape[0], dim, dtype=torch.float64)
    table[:, 0::2] = angles.sin()
    table[:, 1::2] = angles.cos()
    return table.to(torch.float32)


@register("sinusoidal")
class Sinusoidal(PositionalEncoding):
    family, colour, order = "absolute / none", "#8c564b", 1  # the report's column, line colour and place in it

    @dataclass
    class Params:
        base: float = param(10000.0, above(1))
        scale: float = param(0.02, at_least(0))  # the token embeddings' init std (see the module docstring)

    def embed(self, x, positions):
        table = sinusoidal_table(positions.cpu(), x.shape[-1], self.params.base)
        return x + self.params.scale * table.to(x.device, x.dtype)
