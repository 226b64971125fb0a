"""RNoPE-SWA (Cohere) / SWAN-GPT (NVIDIA): interleaved global NoPE layers and RoPE sliding-window layers.

    layers 0, 1, 2 (mod 4): RoPE, sliding window of ``window`` keys
    layer  3       (mod 4): no position encoding, full causal attention

Papers: Yang et al. 2025, "Rope to Nope and Back Again: A New Hybrid Attention Strategy" (arXiv
2501.18795: RoPE with a sliding window in 3 of 4 layers, NoPE full attention in the 4th);
Puvvada et al. 2025, "SWAN-GPT" (arXiv 2504.08719: the same interleaving, plus a dynamic scaling
of the attention logits of the NoPE layers at inference). No official code to compare with.

SWAN-GPT's inference scaling is the row ``rnope_swa+logn`` (``eval.variants=[logn]``): a row's
temperature scales the layers without a window, here the global NoPE layers. posbench implements
it in Qwen's logn form, max(1, log_{train_len} n) on the queries (posbench/evaluation/variants/logn.py); the
paper's exact schedule was not checked against code. Training is identical for both names, so one
encoding serves both, and its two rows compare the scaling on the same weights.

Deviation: window = train_len / 4 (``window: null``); the papers' windows are a fixed share of
their training lengths that posbench does not reproduce (one ratio for every windowed preset).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

from posbench.encodings import register
from posbench.encodings.layers import Layers


@register("rnope_swa")
class RNoPESWA(Layers):
    colour, order = "#e6550d", 2

    @dataclass
    class Params(Layers.Params):
        pattern: List[str] = field(default_factory=lambda: ["rope/swa", "rope/swa", "rope/swa", "nope"])
