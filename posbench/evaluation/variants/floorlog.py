"""Rows ``<encoding>+floorlog``: Llama 4's floor-log attention temperature at inference, for any encoding.

Each query (after rotation) of every layer without a window or temperature of its own (SSMax's,
iRoPE's global layers keep theirs) is multiplied by
1 + beta ln(1 + floor((pos + 1) / floor_scale)). Reference code: HF transformers
``models/llama4/modeling_llama4.py`` (``Llama4TextAttention``, ``attn_temperature_tuning``; Llama 4
trains with it in its NoPE layers: that is ``irope``). Here it is applied to a model trained
without it, as an inference-time temperature.

Scaled to toy lengths: Llama 4's floor_scale 8192 is its chunk size; posbench's default
floor_scale is train_len (``floor_scale: null``), so positions up to train_len - 2 keep a factor
of 1 and the factor grows by beta ln(1 + m) at m times the training length (1.28 at 16x with beta 0.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Optional

from posbench.attention.options import AttentionOptions
from posbench.attention.temperatures import floor_log_scale
from posbench.core.params import param, positive
from posbench.evaluation.variants import register
from posbench.evaluation.variants.base import RowTemperature


@register("floorlog")
class FloorLog(RowTemperature):
    linestyle = "--"

    @dataclass
    class Params:
        beta: float = param(0.1, positive)
        floor_scale: Optional[int] = param(None, positive)  # null: train_len

    def suffix(self) -> str:
        p = self.params
        return "+floorlog" + ("" if (p.beta, p.floor_scale) == (0.1, None) else f"{p.beta:g}@{p.floor_scale or 'L'}")

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        p = self.params
        return opts.replace(query_scale=partial(floor_log_scale, floor_scale=p.floor_scale or train_len, beta=p.beta))
