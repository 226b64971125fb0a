"""Partial RoPE: only some of each head's rotary frequencies turn, the other channels carry no position.

Two recipes, one encoding (``mode``):

* ``truncate`` (default): p-RoPE (Barbero et al., ICLR 2025, "Round and round we go! What makes Rotary
  Positional Encodings useful?", section 6): RoPE's frequencies theta_i = base^(-2i/d) for the
  ``fraction`` p of pairs with the highest frequencies (i < p d / 2), the lowest (1 - p) d / 2 set to
  0, so those channels rotate by nothing and act as position-free "semantic" channels. p = 1 is RoPE,
  p = 0 is NoPE. The paper's best language model kept p = 0.75 (Gemma 2B). HF's ``proportional`` type
  (``_compute_proportional_rope_parameters``, its ``partial_rotary_factor``) is the same construction
  (tested for parity).
* ``neox``: GPT-NeoX's ``rotary_pct`` / HF's ``partial_rotary_factor`` (``_compute_*_parameters`` with
  dim = int(head_dim x partial_rotary_factor)): the first r = fraction x d channels (rounded down to an
  even number) rotate with frequencies base^(-2i/r) spread over the full range on those r channels, the
  rest pass through. GPT-NeoX and Pythia use 0.25.

A RoPE scaling (eval.rope_scaling, extend.method) applies to the rotating part: with ``neox`` it is
computed for a head of r channels (as HF does with partial_rotary_factor); with ``truncate`` for the
whole head, then the lowest pairs are zeroed again (the paper scales nothing; this keeps "p-RoPE of the
scaled RoPE"). Deviation: none beyond the rotate-half pairing RoPE uses here (posbench/encodings/rope.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from posbench.core.errors import PosbenchError
from posbench.core.params import above, at_least, param
from posbench.encodings import register
from posbench.encodings.rope import (
    RoPE,
    apply_rotation,
    rope_frequencies,
    rotation_tables,
)

MODES = ("truncate", "neox")


@register("p_rope")
class PartialRoPE(RoPE):
    family, colour, order = "rotary", None, 1

    @dataclass
    class Params:
        base: float = param(10000.0, above(1))
        fraction: float = param(0.75, at_least(0))  # share of rotary pairs that turn (p of p-RoPE; rotary_pct of GPT-NeoX)
        mode: str = "truncate"  # truncate: zero the lowest frequencies (p-RoPE) | neox: rotate the first channels

        def check(self) -> None:
            if self.mode not in MODES:
                raise PosbenchError(f"encoding.mode={self.mode!r}; valid: {', '.join(MODES)}")
            if not 0 <= self.fraction <= 1:
                raise PosbenchError(f"encoding.fraction={self.fraction:g} must be in [0, 1] (the share of rotating pairs)")
            if not self.base > 1:
                raise PosbenchError(f"encoding.base={self.base:g} must be greater than 1")

    @property
    def rotary_dim(self) -> int:
        d = self.shape.head_dim
        return 2 * int(d * self.params.fraction // 2) if self.params.mode == "neox" else d

    @property
    def turning_pairs(self) -> int:
        """Pairs with a non-zero frequency (truncate) or that rotate at all (neox)."""
        return self.rotary_dim // 2 if self.params.mode == "neox" else int(self.params.fraction * self.shape.head_dim // 2)

    def frequencies(self, options, length):
        scaling, factor = options.rope or self.extension or (None, 1.0)
        r = self.rotary_dim
        if r == 0:
            return torch.zeros(0, dtype=torch.float64), 1.0
        inv_freq, attention_scale = rope_frequencies(r, self.params.base, scaling, factor, self.shape.train_len, length)
        if self.params.mode == "truncate":
            inv_freq = inv_freq.clone()
            inv_freq[self.turning_pairs:] = 0.0
        return inv_freq, attention_scale

    def rotate(self, q, k, state):
        cos, sin = state[:2]
        r = cos.shape[-1]
        if r == q.shape[-1]:
            return apply_rotation(q, cos, sin), apply_rotation(k, cos, sin)
        turn = lambda x: torch.cat((apply_rotation(x[..., :r], cos, sin), x[..., r:]), dim=-1)  # noqa: E731
        return turn(q), turn(k)

    def prepare(self, positions, options):
        inv_freq, attention_scale = self.frequencies(options, len(positions))
        cos, sin = rotation_tables(positions, inv_freq)
        return cos, sin, attention_scale
