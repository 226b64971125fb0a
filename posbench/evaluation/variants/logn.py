"""Rows ``<encoding>+logn``: Qwen's logn attention at inference, for any encoding.

Each query (after rotation) of every layer without a window or temperature of its own (SSMax's,
iRoPE's global layers keep theirs) is multiplied by
log_{train_len}(n) where n = its index + 1 exceeds the training length, 1 otherwise (so the 1x
window is untouched). Reference code: Qwen-1 ``modeling_qwen.py`` (``use_logn_attn``:
``logn_list = [math.log(i, seq_length) if i > seq_length else 1 ...]``, applied to the queries when
not training); seq_length is the training length, so nothing needs scaling to toy lengths.
On ``rnope_swa`` it scales the global NoPE layers only: SWAN-GPT's inference scaling in this form.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from posbench.attention.options import AttentionOptions
from posbench.attention.temperatures import logn_scale
from posbench.evaluation.variants import register
from posbench.evaluation.variants.base import RowTemperature


@register("logn")
class LogN(RowTemperature):
    linestyle = ":"

    @dataclass
    class Params:
        pass

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        return opts.replace(query_scale=partial(logn_scale, train_len=train_len))
