"""DeepSeek's decoupled RoPE (DeepSeek-AI 2024, "DeepSeek-V2", arXiv 2405.04434, section 2.1.3, used by
Multi-head Latent Attention): position enters a small slice of each head through RoPE, with one rotary
key slice shared by every head; the rest of each head carries no position.

    q_h = [q_h^C ; RoPE(q_h^R)],   k_h = [k_h^C ; RoPE(k^R)]                (k^R shared across heads)
    logit_hij = (q_hi^C . k_hj^C + RoPE_i(q_hi^R) . RoPE_j(k_j^R)) / sqrt(d_h)

DeepSeek-V2 has 128 position-free and 64 rotary channels per head (``qk_nope_head_dim`` 128,
``qk_rope_head_dim`` 64 in HF ``models/deepseek_v2/configuration_deepseek_v2.py``; ``k_pe`` is one
vector per token, ``kv_a_proj_with_mqa`` -> ``k_pe`` broadcast to the heads in
``modeling_deepseek_v2.py``), softmax scale 1 / sqrt(192): a third of the q.k channels rotate, with
RoPE's spectrum spread over those channels (base^(-2i/64)), as GPT-NeoX's ``rotary_pct``.

How it maps onto posbench's multi-head attention (composed from ``p_rope`` in mode neox: the first
``rope_dim`` channels of each head rotate with frequencies base^(-2i/rope_dim), the rest pass through):
the shared rotary key is the mean over heads of the heads' first ``rope_dim`` key channels, one linear
map of the layer input (DeepSeek's W^KR, here parametrised through the existing key projection, no new
weights); each head keeps its own rotary query slice (DeepSeek's W^QR). Default ``rope_dim``: a third
of the head rounded down to an even number (10 of 32 at the small model), DeepSeek's share.

Deviations: no latent compression (the low-rank KV and query down-projections of MLA and their norms
are not built: posbench's q, k, v come from one full-rank projection), and q.k and v share posbench's
head width d_h (DeepSeek: 192 for q.k, 128 for v); rotate-half pairing (as every RoPE here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from posbench.core.errors import PosbenchError
from posbench.core.params import above, param, positive
from posbench.encodings import register
from posbench.encodings.p_rope import PartialRoPE
from posbench.encodings.rope import rope_frequencies


@register("decoupled_rope")
class DecoupledRoPE(PartialRoPE):
    family, colour, order = "rotary", None, 3

    @dataclass
    class Params:
        base: float = param(10000.0, above(1))
        rope_dim: Optional[int] = param(None, positive)  # rotary channels per head (even); null: a third of the head

    def __init__(self, shape, params):
        super().__init__(shape, params)
        r = self.rotary_dim
        if r % 2 or r > shape.head_dim or r < 2:
            raise PosbenchError(f"encoding.rope_dim={r} must be an even number from 2 to the head width "
                                f"{shape.head_dim} (d_model / n_heads)")

    @property
    def rotary_dim(self) -> int:
        if self.params.rope_dim is not None:
            return self.params.rope_dim
        return max(2, 2 * (self.shape.head_dim // 3 // 2))

    @property
    def turning_pairs(self) -> int:
        return self.rotary_dim // 2

    def frequencies(self, options, length):
        scaling, factor = options.rope or self.extension or (None, 1.0)
        return rope_frequencies(self.rotary_dim, self.params.base, scaling, factor, self.shape.train_len, length)

    def rotate(self, q, k, state):
        r = self.rotary_dim
        shared = k[..., :r].mean(dim=1, keepdim=True).expand(-1, k.shape[1], -1, -1)  # one rotary key for all heads
        return super().rotate(q, torch.cat((shared, k[..., r:]), dim=-1), state)
