"""CABLE: context-aware biases for length extrapolation (arXiv 2503.08067, 2025).

    b_t = - sum_{s<=t} softplus(w_h . x_s + c_h)          (per head, from the layer's input x)
    logit_ij = q_i . k_j / sqrt(d_h) + b_i - b_j = q_i . k_j / sqrt(d_h) - sum_{s=j+1}^{i} softplus(w_h . x_s + c_h)

An ALiBi whose slope is learned per token and head: each token adds its own non-negative step
softplus(.) to the distance, so the bias is 0 on the diagonal and never increases with distance
(ALiBi is the case of a constant step m_h). No other position encoding.

Reference code: axiomlab/Cable ``src/Cable.py`` (``CausalSelfAttention``: ``h_attn = nn.Linear(n_embd,
n_head)``, ``b = cumsum(-softplus(h_attn(x)), dim=1)``, ``Bias = b[..., :, None] - b[..., None, :]``
plus the causal mask, added to the scores; the model's ``_init_weights``: Linear weights N(0, 0.02),
biases 0; x is the block's input after its LayerNorm, as here). Computed per block of queries from
the [B, H, L] cumulative sums (the ``content_bias`` hook, ``kernels.Decay`` as FoX's c_i - c_j), never
as a whole L x L matrix.

Deviations: the reference scales q and k each by 1 / sqrt(C / n_embd) = 1, so its q.k is not divided
by sqrt(d_h); posbench keeps 1 / sqrt(d_h) for every encoding, so that rows differ only in their
position terms (the bias is added unscaled, as in the reference). The step is computed in float32
(as FoX's gates). Its parameters have no weight decay (encoding parameters).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from posbench.attention.kernels import Decay
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding, per_layer_head_gates


@register("cable")
class Cable(PositionalEncoding):
    family, colour, order = "data-dependent", None, 2
    content_is_decay = True
    init_note = ("at the authors' initialisation (step bias 0) every token's step is softplus(0) = ln 2, so a key 20 "
                 "tokens back is damped by 2^-20 (about 1e-6), as FoX's gates at 1/2")

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.steps = per_layer_head_gates(shape)

    def cumulative_bias(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """b [B, H, L] = cumsum(-softplus(w . x + c)) over positions (in float32)."""
        return (-F.softplus(self.steps[layer](x).float())).cumsum(1).transpose(1, 2)

    def content_bias(self, x, q, k, layer):
        return Decay(self.cumulative_bias(x, layer))  # b_i - b_j, explicit per block or through flex
