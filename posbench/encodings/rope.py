"""RoPE: rotary position embedding (Su et al. 2021, "RoFormer").

Channel pairs (x_a, x_b) of every query and key are rotated by the angle p * theta_i,

    theta_i = base^(-2i / d),  i = 0 .. d/2 - 1,  base = 10000,

so that q_m . k_n depends on the positions only through the offset m - n. We pair channel i with
channel i + d/2 (the "rotate half" layout of GPT-NeoX); this is a fixed permutation of the paper's
adjacent pairs and gives the same model class.
"""

from dataclasses import dataclass

import torch

from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


def rope_frequencies(head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """Inverse frequencies theta_i = base^(-2i/head_dim), shape [head_dim // 2]."""
    if head_dim % 2:
        raise ValueError(f"RoPE needs an even head dimension, got {head_dim}")
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def apply_rotation(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return (x * cos + rotate_half(x) * sin).to(x.dtype)


def rotation_tables(positions: torch.Tensor, inv_freq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of shape [L, head_dim] for the given positions (computed in float64, then cast)."""
    angles = positions.to(torch.float64)[:, None] * inv_freq.to(positions.device)[None, :]
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().float(), angles.sin().float()


@register("rope")
class RoPE(PositionalEncoding):
    uses_rotation = True

    @dataclass
    class Params:
        base: float = 10000.0

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.inv_freq = rope_frequencies(shape.head_dim, params.base)

    def prepare(self, positions):
        return rotation_tables(positions, self.inv_freq)

    def rotate(self, q, k, state):
        cos, sin = state
        return apply_rotation(q, cos, sin), apply_rotation(k, cos, sin)
