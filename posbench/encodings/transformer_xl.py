"""Transformer-XL relative positional encoding (Dai et al. 2019), without the segment memory:

    A_ij = q_i . k_j + q_i . W_R R_{i-j} + u . k_j + v . W_R R_{i-j}
         = (q_i + u) . k_j + (q_i + v) . W_R R_{i-j}

R is the sinusoidal table of distances (d_model channels), W_R a learned projection per layer,
u and v learned per head and shared across layers (the paper's default).

Reference code followed: kimiyoung/transformer-xl, ``pytorch/mem_transformer.py``
(``RelPartialLearnableMultiHeadAttn``: ``r_net`` without bias; ``r_w_bias`` = u and ``r_r_bias`` = v
of shape [heads, head_dim], one pair for the model) and ``pytorch/train.py`` (``weights_init``:
every weight, u and v included, drawn from N(0, init_std = 0.02)). Deviation: no segment memory
(posbench scores windows, not a recurrent stream), pre-LN blocks like the rest of posbench. The position term is
computed once per distance and gathered by distance (the relative-shift trick generalised to
explicit positions, posbench.attention.kernels.relative_causal_attention), never as L x L x d; in
evaluation on CPU the sinusoids of i - j are split into functions of i and of j, and the whole
attention is one causal SDPA call (``split_attention``: the same logits to float tolerance).
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from posbench.attention.kernels import relative_causal_attention
from posbench.core.params import above, param
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding
from posbench.encodings.sinusoidal import sinusoidal_table


@register("transformer_xl")
class TransformerXL(PositionalEncoding):
    family, colour, order = "relative (content)", "#dbdb8d", 1  # the report's column, line colour and place in it
    translation_invariant = True

    @dataclass
    class Params:
        base: float = param(10000.0, above(1))

    def __init__(self, shape, params):
        super().__init__(shape, params)
        H, Dh = shape.n_heads, shape.head_dim
        self.w_r = nn.ModuleList(nn.Linear(shape.d_model, shape.d_model, bias=False) for _ in range(shape.n_layers))
        for w in self.w_r:
            nn.init.normal_(w.weight, std=0.02)
        # N(0, 0.02) like every other weight in the authors' code (train.py, weights_init)
        self.u = nn.Parameter(torch.randn(H, Dh) * 0.02)
        self.v = nn.Parameter(torch.randn(H, Dh) * 0.02)

    def relative_attention(self, q, k, v, positions, layer, options):
        # evaluation on CPU (where SDPA's flash kernel takes a key wider than the value; unchecked on CUDA)
        if q.device.type == "cpu" and options.block is None and options.window is None and not torch.is_grad_enabled() \
                and bool((positions[1:] >= positions[:-1]).all()):
            return self.split_attention(q, k, v, positions, layer, options)
        H, Dh = self.shape.n_heads, self.shape.head_dim
        max_dist = int(positions.max() - positions.min())
        R = sinusoidal_table(max_dist + 1, self.shape.d_model, self.params.base).to(q.device, q.dtype)
        rel_k = self.w_r[layer](R).view(max_dist + 1, H, Dh).transpose(0, 1)  # [H, distances, Dh]
        return relative_causal_attention(
            q + self.u[None, :, None].to(q.dtype), k, v, positions,
            rel_q=q + self.v[None, :, None].to(q.dtype), rel_k=rel_k, block=options.block, window=options.window,
            scale=self.relative_scale(options),
        )

    def split_attention(self, q, k, v, positions, layer, options):
        """The same logits as one causal SDPA call (evaluation on CPU: no grad, no block or window, positions
        non-decreasing), since a sinusoid of i - j splits into functions of i and of j: per frequency w,

            a_s sin w(i - j) + a_c cos w(i - j) = (a_s sin wi + a_c cos wi) cos wj + (a_c sin wi - a_s cos wi) sin wj

        so (q_i + v) . W_r R_{i-j} = Q'_i . K'_j with a = W_r^T (q_i + v) [d_model], Q'_i = (the two
        brackets) and K'_j = (cos wj, sin wj): attention over [q_i + u, Q'_i] . [k_j, K'_j], no distance
        table and no L x L term held (flash SDPA, head size Dh + d_model). Angles in float64, as sinusoidal_table."""
        B, H, L, Dh = q.shape
        inv_freq = self.params.base ** (-torch.arange(0, self.shape.d_model, 2, dtype=torch.float64,
                                                     device=q.device) / self.shape.d_model)
        angles = positions.to(torch.float64)[:, None] * inv_freq[None, :]  # [L, d_model / 2]
        sin, cos = angles.sin().to(q.dtype), angles.cos().to(q.dtype)
        w = self.w_r[layer].weight.to(q.dtype).view(H, Dh, self.shape.d_model)
        a = torch.einsum("bhle,hem->bhlm", q + self.v[None, :, None].to(q.dtype), w)  # [B, H, L, d_model]
        a_sin, a_cos = a[..., 0::2], a[..., 1::2]  # table columns: sin at even, cos at odd (sinusoidal_table)
        q_pos = torch.cat((a_sin * sin + a_cos * cos, a_cos * sin - a_sin * cos), dim=-1)
        k_pos = torch.cat((cos, sin), dim=-1).expand(B, H, L, self.shape.d_model)
        query = torch.cat((q + self.u[None, :, None].to(q.dtype), q_pos), dim=-1)
        key = torch.cat((k, k_pos), dim=-1)
        # v zero-padded to the key's width: the CPU flash kernel takes one head size (else SDPA falls back to
        # its math kernel, which holds the L x L scores)
        value = F.pad(v, (0, self.shape.d_model))
        return F.scaled_dot_product_attention(query, key, value, is_causal=True, scale=self.relative_scale(options))[..., :Dh]
