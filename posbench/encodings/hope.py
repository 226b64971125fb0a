"""HoPE, High-frequency rotary Position Encoding (Chen, Lv, Luan, Wang & Liu, ACL 2025; arXiv 2410.21216,
"HoPE: A Novel Positional Encoding Without Long-Term Decay for Enhanced Context Awareness and
Extrapolation"): RoPE on the high-frequency pairs only, the low-frequency ones position-independent.

    theta_i = base^(-2i/d_h)         for the pairs that turn a full period within the training window,
                                      theta_i x train_len >= 2 pi
    theta_i = 0                      for the others (those channels carry no position: NoPE channels)

The paper's argument: the low-frequency components never complete a period within the training length
("activated" components that the model turns into a long-term-decay shortcut, the U-shaped attention),
and rotate to angles never seen in training when evaluated longer; HoPE replaces them with
position-independent components and keeps the high frequencies. No code of the authors was found in
the stored index, so the cut (a full period within train_len) is this file's reading of the paper's
description, not checked against code. RoPE-ID (Wertheimer et al., ICLR 2026, arXiv 2603.18017,
"Frayed RoPE and Long Inputs"; found, abstract read: "apply RoPE with high frequency to a subset of
channels") is the same family; its subset was not checked either.

How it differs from ``p_rope`` (posbench/encodings/p_rope.py, mode truncate): both zero the lowest
frequencies of RoPE's spectrum and keep the rest unchanged, but p-RoPE keeps a fixed ``fraction`` of the
pairs (0.75), whatever the training length, where HoPE keeps the pairs that turn at least once within
train_len: at train_len 64 and d_h 32 (the small and tiny models) the 5 highest of 16 pairs (31%),
at train_len 256 7 of 16. So ``hope`` is ``p_rope`` with fraction = turning pairs / (d_h / 2) (tested), with the
fraction derived from the training length as the paper derives it. A RoPE scaling (eval.rope_scaling,
extend.method) applies as in p_rope: computed for the whole head, then the same pairs zeroed again.
Deviation: rotate-half pairing (as every RoPE here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


from posbench.core.params import above, param
from posbench.encodings import register
from posbench.encodings.rope import RoPE, rope_frequencies


def turning_pairs(head_dim: int, base: float, train_len: int) -> int:
    """How many of the highest-frequency pairs turn a full period within ``train_len`` tokens:
    the i with base^(-2i/d) x train_len >= 2 pi (the frequencies fall with i, so a prefix)."""
    inv_freq = rope_frequencies(head_dim, base)[0]
    return int((inv_freq * train_len >= 2 * math.pi - 1e-9).sum())


@register("hope")
class HoPE(RoPE):
    family, colour, order = "rotary", None, 2

    @dataclass
    class Params:
        base: float = param(10000.0, above(1))

    @property
    def turning_pairs(self) -> int:
        return turning_pairs(self.shape.head_dim, self.params.base, self.shape.train_len)

    def frequencies(self, options, length):
        inv_freq, attention_scale = super().frequencies(options, length)
        inv_freq = inv_freq.clone()
        inv_freq[self.turning_pairs:] = 0.0  # the low frequencies: position-independent channels
        return inv_freq, attention_scale
