"""Stick-breaking attention (Tan, Shen, Yang, Courville & Panda 2025, ICLR; arXiv 2410.17980).

Softmax is replaced by a stick broken from the nearest key backwards: each key j takes a share
beta_ij = sigmoid(q_i . k_j / sqrt(d_h)) of what the nearer keys left,

    A_ij  = beta_ij prod_{j < t < i} (1 - beta_it)                  (keys j < i)
    out_i = sum_{j < i} A_ij v_j + rem_i v_i,   rem_i = 1 - sum_{j < i} A_ij

so recency is built into the weights and no position encoding is used. Reference code:
shawntan/stickbreaking-attention (``stickbreaking_attention/sb_ref.py``: ``log_z = logsigmoid(logits)``,
``log_beta = logsigmoid(-logits)``, a reverse cumulative sum of ``log_beta``, ``att @ v, 1 -
att.sum(-1)``; its tests add ``rem[..., None] * v``, and IBM dolomite-engine's stick-breaking layer
does so by default, ``sb_remainder: true``); defaults ``attend_current: false`` (the diagonal is
masked, its value enters through the remainder) and inv_temp 1/sqrt(d_h). Nothing needs scaling
to toy lengths: the method has no length parameter.

posbench runs it in plain PyTorch (posbench.attention.kernels.stick_breaking_attention, blocks of queries,
float32, each against the keys its sticks reach: to e^-80), on CPU and GPU alike, not the reference's Triton kernel: the same formula, slower. It
computes its own attention, as the relative encodings do (``relative_attention``), so the rows that
change a softmax layer's queries (``+logn``, ``+floorlog``) do not apply; an evaluation window
(``+swa``, ``+chunk``: the far-context control) and blockwise causal attention (``+bca``) do: the keys
they hide take no share of the stick.
"""

from __future__ import annotations

from dataclasses import dataclass

from posbench.attention.kernels import stick_breaking_attention
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


@register("stickbreaking")
class StickBreaking(PositionalEncoding):
    family, colour, order = "softmax / gate", "#9ecae1", 3
    init_note = ("at initialisation q . k is near 0, so each key takes about half of what the nearer keys left and a "
                 "key d tokens back gets about 2^-d of the attention (1e-6 at 20 tokens)")

    @dataclass
    class Params:
        attend_current: bool = False  # the reference's default: the diagonal only through the remainder
        remainder: bool = True  # rem_i v_i added (the reference's tests, dolomite's sb_remainder)

    def relative_attention(self, q, k, v, positions, layer, options):
        return stick_breaking_attention(q, k, v, self.relative_scale(options), self.params.attend_current,
                                        self.params.remainder, options.block, window=options.window)
