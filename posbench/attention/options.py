"""What one forward pass is asked to do differently from the trained configuration: a window, a
temperature, other positions, a RoPE scaling, an attention recorder (``AttentionOptions``). Made
per forward by the evaluation's variants, never stored in the model, so nothing set for one report
row can leak into the next or into a checkpoint."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class AttentionOptions:
    """Per-forward switches of the attention, passed down to every layer and encoding hook.

    kernel       bias encodings: ``auto`` | ``flex`` | ``chunked`` (posbench/attention/kernels.py)
    block        blockwise causal attention: a query sees keys from the previous block of ``block``
                 tokens on (Sun et al. 2022); None: full causal attention
    logit_scale  every attention logit (content and position terms) is multiplied by it
    rope         (scaling type, factor) for rotary encodings (posbench/attention/rope_scalings.py);
                 None: the frequencies the model was trained with
    recorder     attention diagnostics (posbench/evaluation/diagnostics.py), evaluation only
    attention    rotary encodings: an evaluation variant's own attention, called instead of
                 rotate-then-attend as ``attention(q, k, v, encoding, positions, options)`` with q, k not
                 yet rotated (training-free extenders: ReRoPE, SelfExtend, DCA in posbench/evaluation/variants/);
                 None: the usual path
    window       a local window (posbench.attention.kernels.Window) for every layer that has none of its own
    query_scale  a temperature by position: ``f(positions [L], keys_seen [L]) -> [L]`` multiplying
                 the queries (after rotation) of every layer without a window or temperature of its own (Qwen's
                 logn, Llama 4's floor-log rows; with RNoPE-SWA, logn on its global layers is SWAN-GPT's)
    """

    kernel: str = "auto"
    block: Optional[int] = None
    logit_scale: float = 1.0
    rope: Optional[tuple[str, float]] = None
    recorder: Any = None
    attention: Optional[Callable] = None
    window: Any = None
    query_scale: Any = None

    def replace(self, **changes) -> "AttentionOptions":
        return dataclasses.replace(self, **changes)
