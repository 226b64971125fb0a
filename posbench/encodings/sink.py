"""Attention sinks: a learned sink logit per layer and head in the softmax denominator (gpt-oss), on RoPE.

    a_ij = exp(l_ij) / (exp(sink_h) + sum_{j' <= i} exp(l_ij')),   out_i = sum_j a_ij v_j

so a head can give part of its attention to nothing. Reference code: HF transformers
``models/gpt_oss/modeling_gpt_oss.py`` (``GptOssAttention.sinks``, one per head;
``eager_attention_forward`` appends the sink logit to every row of scores, softmaxes, drops it;
``_init_weights``: sinks ~ N(0, initializer_range = 0.02)). StreamingLLM (Xiao et al. 2024) keeps
sink *tokens* in a window instead; that is an evaluation protocol, not built here.

Deviations: gpt-oss alternates 128-token sliding-window and full layers and uses YaRN-scaled RoPE;
here every layer is full causal attention with plain RoPE, so the row isolates the sink (a window
pattern with sinks is not a preset). The sink logits have no weight decay (encoding parameters).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from posbench.core.params import at_least, param
from posbench.encodings import register
from posbench.encodings.rope import RoPE


@register("sink")
class Sink(RoPE):
    family, colour, order = "softmax / gate", "#fd8d3c", 1
    longrope = False  # LongRoPE's committed factors are searched on plain RoPE checkpoints, keyed by size only
    rope_scalable = True  # a RoPE model: the scalings change its frequencies, the sink stays in the softmax

    @dataclass
    class Params(RoPE.Params):
        init_std: float = param(0.02, at_least(0))

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.sinks = nn.Parameter(torch.randn(shape.n_layers, shape.n_heads) * params.init_std)

    def sink(self, layer):
        return self.sinks[layer]
