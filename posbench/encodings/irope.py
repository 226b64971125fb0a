"""iRoPE (Llama 4): interleaved chunked-local RoPE layers and global NoPE layers with a temperature.

    layers 0, 1, 2 (mod 4): RoPE, chunked attention (a query sees its own chunk of ``window`` tokens)
    layer  3       (mod 4): no position encoding, full causal attention, queries scaled by
                            1 + beta * ln(1 + floor((pos + 1) / floor_scale))

Reference code: HF transformers ``models/llama4/modeling_llama4.py`` (``Llama4TextAttention``:
``use_rope = no_rope_layers[layer_idx]``, every 4th layer without RoPE; ``attn_temperature_tuning``
scales the queries of the NoPE layers as above, in training and inference alike;
``configuration_llama4.py``: ``layer_types`` chunked_attention for RoPE layers,
``attention_chunk_size`` 8192, ``floor_scale`` 8192, ``attn_scale`` (beta) 0.1).
Meta's Llama 4 post calls this inference-time temperature scaling; HF applies it in every forward.

Scaled to toy lengths, honestly: Llama 4 ties floor_scale to the chunk size (8192 both), with
training contexts many chunks long. posbench keeps the tie and the number of chunks per training
window modest: chunk = floor_scale = train_len / 4 (16 at train_len 64), beta 0.1 unchanged (it is
dimensionless). So a training window holds 4 chunks, and the temperature already varies within it
(1.07 from position 15, 1.16 at position 63), as Llama 4's does past 8192 tokens; at 16x (1024
tokens) it reaches 1 + 0.1 ln 65 = 1.42.
Deviations: Llama 4 Scout's L2 QK-norm in the RoPE layers and RoPE base 500000 are not used (the
base is posbench's rope default, 10000: positions never exceed one chunk in the RoPE layers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import List, Optional

from posbench.attention.temperatures import floor_log_scale
from posbench.core.params import at_least, param, positive
from posbench.encodings import register
from posbench.encodings.layers import Layers, LayerView


@register("irope")
class IRoPE(Layers):
    colour, order = "#3182bd", 1

    @dataclass
    class Params(Layers.Params):
        pattern: List[str] = field(default_factory=lambda: ["rope/chunk", "rope/chunk", "rope/chunk", "nope"])
        floor_scale: Optional[int] = param(None, positive)  # null: the chunk size (window), as Llama 4 (8192 both)
        beta: float = param(0.1, at_least(0))  # Llama 4's attn_scale

    def view(self, layer, name, window):
        part = self.parts[name]
        if part.uses_rotation:
            return super().view(layer, name, window)
        floor_scale = self.params.floor_scale or self.window_size
        return LayerView(part, window, partial(floor_log_scale, floor_scale=floor_scale, beta=self.params.beta))
