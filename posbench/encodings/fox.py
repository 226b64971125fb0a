"""FoX, the Forgetting Transformer (Lin et al. 2025, ICLR): a data-dependent ALiBi from forget gates.

    f_t = sigmoid(w_h . x_t + b_h)                      (per head, from the layer's input)
    logit_ij = q_i . k_j / sqrt(d_h) + sum_{t=j+1}^{i} ln f_t = q_i . k_j / sqrt(d_h) + c_i - c_j,
    c = cumsum(ln f)

No other position encoding. Reference code: zhixuan-lin/forgetting-transformer
``src/forgetting_transformer/model/forgetting_transformer/modeling_forgetting_transformer.py``
(``ForgettingAttentionLayer``, ``fgate_type="full"``: ``fgate_proj = nn.Linear(hidden, heads,
bias=True)``, ``log_fgate = logsigmoid(fgate_proj(x))``; weights N(0, 0.02), bias 0) and
``src/forgetting_transformer/ops/forgetting_attention.py`` (the reference path of its test:
``log_lambda = cumsum(log_fgate)``, ``decay_bias = log_lambda[..., :, None] - log_lambda[..., None, :]``).

This is the paper's "FoX (LLaMA)" layer; the "Pro" block (output gate, QK-norm, key/value shift)
is not built. The term is computed per block of queries from the [B, H, L] cumulative sums (the
``content_bias`` hook), never as a whole L x L matrix; attention rows of a temperature row
(``+temp``) scale q.k, not the forget term. Deviation: the gate's parameters have no weight decay
(encoding parameters).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from posbench.attention.kernels import Decay
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding, per_layer_head_gates


@register("fox")
class ForgettingTransformer(PositionalEncoding):
    family, colour, order = "data-dependent", "#9e9ac8", 0
    content_is_decay = True
    init_note = ("at the authors' initialisation (gate bias 0) every forget gate is 1/2, so attention 20 tokens back "
                 "is damped by about 1e-6 and a retrieval head must first learn to open the gates (with the bias "
                 "started at +4 the same harness learns passkey at every depth)")

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.fgate = per_layer_head_gates(shape)

    def log_forget(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """ln f [B, H, L] (in float32, as the reference)."""
        return F.logsigmoid(self.fgate[layer](x).float()).transpose(1, 2)

    def content_bias(self, x, q, k, layer):
        return Decay(self.log_forget(x, layer).cumsum(-1))  # c_i - c_j, explicit per block or through flex
