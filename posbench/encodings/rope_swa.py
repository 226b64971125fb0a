"""RoPE with a sliding window in every layer (Mistral 7B's sliding-window attention; the "SWA" model
of SWAN-GPT's comparisons): the layer pattern ``[rope/swa]``, a window of ``window`` keys.

Reference: HF transformers ``sliding_window`` (``models/mistral``; mask ``kv_idx > q_idx - window``).
Deviation: window = train_len / 4 (``window: null``; Mistral: 4096 at 8192), the same ratio as the
windowed layers of ``irope`` and ``rnope_swa``, so that the three compare. Any other encoding with a
window: ``encoding=layers encoding.pattern=[alibi/swa]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

from posbench.encodings import register
from posbench.encodings.layers import Layers


@register("rope_swa")
class RoPESWA(Layers):
    colour, order = "#31a354", 3

    @dataclass
    class Params(Layers.Params):
        pattern: List[str] = field(default_factory=lambda: ["rope/swa"])
