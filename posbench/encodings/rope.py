"""RoPE: rotary position embedding (Su et al. 2021, "RoFormer"), and its context extensions.

Channel pairs (x_a, x_b) of every query and key are rotated by the angle p * theta_i,

    theta_i = base^(-2i / d),  i = 0 .. d/2 - 1,  base = 10000,

so that q_m . k_n depends on the positions only through the offset m - n. We pair channel i with
channel i + d/2 (the "rotate half" layout of GPT-NeoX); this is a fixed permutation of the paper's
adjacent pairs and gives the same model class.

Context extension (PI, NTK, dynamic NTK, YaRN and any registered scaling) is a RoPE scaling
(posbench/attention/rope_scalings.py): an evaluation row asks for one per forward
(``AttentionOptions.rope``), and an extension run (posbench/training/extend.py) trains with one static
scaling (``extend_to``). Frequencies are computed per forward from those, never stored in a
checkpoint, so loading one cannot undo them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import (
    ROPE_SCALINGS,
    extend_methods,
    plain_frequencies,
    scaled_frequencies,
)
from posbench.core.errors import PosbenchError
from posbench.core.params import above, param
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


def rope_frequencies(
    head_dim: int,
    base: float = 10000.0,
    scaling: str | None = None,
    factor: float = 1.0,
    original_length: int | None = None,
    length: int | None = None,
) -> tuple[torch.Tensor, float]:
    """(inverse frequencies [head_dim // 2], attention scale) for plain RoPE or a scaling type.

    The attention scale multiplies the q.k logits (on top of 1/sqrt(head_dim)); it is 1 except for
    YaRN. ``scaling``: None, or a name of the RoPE scaling registry (linear, ntk, dynamic_ntk, yarn, ...).
    """
    if head_dim % 2:
        raise ValueError(f"RoPE needs an even head dimension, got {head_dim}")
    if scaling is None:
        return plain_frequencies(head_dim, base), 1.0
    return scaled_frequencies(scaling, head_dim, base, factor, original_length, length)


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
    family, colour, order = "rotary", "#1f77b4", 0  # the report's column, line colour and place in it
    rope_scalable = True
    translation_invariant = True

    @dataclass
    class Params:
        base: float = param(10000.0, above(1))

    def __init__(self, shape, params):
        super().__init__(shape, params)
        if shape.head_dim % 2:
            raise PosbenchError(f"{self.name} needs an even head dimension, got d_model/n_heads = {shape.head_dim}")
        self.extension: tuple[str, float] | None = None  # (scaling, factor) an extension run trains with

    def extend_to(self, method, factor):
        """Train and evaluate with a static scaling at one factor, as PI and YaRN fine-tune."""
        if method not in extend_methods():
            raise PosbenchError(f"extend.method={method!r}; valid for rope: {', '.join(extend_methods())}")
        kind = None if method == "none" else ROPE_SCALINGS.get(method)
        if kind is not None and kind.unavailable is not None:
            if reason := kind.unavailable(self.rotary_dim, self.params.base, float(factor), self.shape.train_len):
                raise PosbenchError(f"extend.method={method}: {reason}")
        self.extension = None if method == "none" else (method, float(factor))

    @property
    def rotary_dim(self) -> int:
        """Channels per head that rotate (all of them; partial RoPE rotates fewer)."""
        return self.shape.head_dim

    def frequencies(self, options: AttentionOptions, length: int) -> tuple[torch.Tensor, float]:
        """(inverse frequencies, factor on the logits) for a forward with ``options`` at ``length``:
        the row's scaling, else an extension run's own, else plain RoPE. (Plain attributes, not
        buffers: frequencies are a function of the config and the row, never of a checkpoint.)"""
        scaling, factor = options.rope or self.extension or (None, 1.0)
        return rope_frequencies(self.shape.head_dim, self.params.base, scaling, factor, self.shape.train_len, length)

    def prepare(self, positions, options):
        inv_freq, attention_scale = self.frequencies(options, len(positions))
        cos, sin = rotation_tables(positions, inv_freq)
        return cos, sin, attention_scale

    def rotate(self, q, k, state):
        cos, sin = state[:2]
        return apply_rotation(q, cos, sin), apply_rotation(k, cos, sin)

    def softmax_scale(self, state):
        attention_scale = state[-1]
        return None if attention_scale == 1.0 else attention_scale / math.sqrt(self.shape.head_dim)
