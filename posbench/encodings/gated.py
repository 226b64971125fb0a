"""Gated attention (Qiu et al. 2025, "Gated Attention for Large Language Models"), on RoPE.

    y_i = SDPA(q, k, v)_i * sigmoid(x_i W_g)          (before the output projection)

x the layer's (normalised) input. Elementwise: W_g is D x D, one gate per head and channel (the
paper's best, "G1"); headwise: D x H, one gate per head. Reference code: qiuzh20/gated_attention
``modeling_qwen3.py`` (``Qwen3Attention``: ``q_proj`` widened by the gate's columns, split into the
queries and ``gate_score``; ``attn_output * torch.sigmoid(gate_score)`` before ``o_proj``).

Deviations: W_g is its own matrix (the same function as extra columns of q_proj; N(0, 0.02) like
the projections), and as an encoding parameter it has no weight decay, unlike q_proj's columns.
Qwen3's QK-norm and GQA are not used.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from posbench.core.errors import PosbenchError
from posbench.encodings import register
from posbench.encodings.rope import RoPE


@register("gated")
class GatedAttention(RoPE):
    family, colour, order = "softmax / gate", "#74c476", 2
    longrope = False  # LongRoPE's committed factors are searched on plain RoPE checkpoints, keyed by size only
    rope_scalable = True  # a RoPE model: the scalings' claims are about extension, so they apply (the gate follows)

    @dataclass
    class Params(RoPE.Params):
        kind: str = "elementwise"  # or headwise

        def check(self) -> None:
            if self.kind not in ("elementwise", "headwise"):
                raise PosbenchError(f"encoding.kind of 'gated' must be elementwise or headwise, got {self.kind!r}")

    def __init__(self, shape, params):
        super().__init__(shape, params)
        width = shape.d_model if params.kind == "elementwise" else shape.n_heads
        self.gates = nn.ModuleList(nn.Linear(shape.d_model, width, bias=False) for _ in range(shape.n_layers))
        for g in self.gates:
            nn.init.normal_(g.weight, std=0.02)

    def gate(self, x, y, layer):
        B, H, L, Dh = y.shape
        g = self.gates[layer](x).view(B, L, H, -1).transpose(1, 2)  # [B, H, L, Dh or 1]
        return y * torch.sigmoid(g).to(y.dtype)
