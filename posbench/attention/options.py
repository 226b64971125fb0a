"""What one forward pass is asked to do differently from the trained configuration: a window, a
temperature, other positions, a RoPE scaling, an attention recorder (``AttentionOptions``). Made
per forward by the evaluation's variants, never stored in the model, so nothing set for one report
row can leak into the next or into a checkpoint."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional

from posbench.core.device import ATTENTION_SETTINGS
from posbench.core.errors import PosbenchError

# what a training-free extender's kernel (piecewise rotary attention) cannot do: the options refuse
# them beside ``attention`` rather than drop them (each as the row that would ask for it)
NOT_WITH_EXTENDER = {"block": "blockwise causal attention (+bca)", "window": "a local window (+swaL, +chunkL)",
                     "query_scale": "a row temperature (+logn, +floorlog)", "recorder": "attention diagnostics"}


@dataclass(frozen=True)
class AttentionOptions:
    """Per-forward switches of the attention, passed down to every layer and encoding hook.

    kernel       bias encodings: ``auto`` | ``flex`` | ``chunked`` (posbench/attention/kernels.py)
    block        blockwise causal attention: a query sees keys from the previous block of ``block``
                 tokens on (Sun et al. 2022); None: full causal attention
    logit_scale  every attention logit (content and position terms; a sink logit excepted) is multiplied by it
    rope         (scaling type, factor) for rotary encodings (posbench/attention/rope_scalings.py): the
                 type's registered name, or a ``RopeScaling`` at settings of its own (the ``tuned`` rows);
                 None: the frequencies the model was trained with
    recorder     attention diagnostics (posbench/evaluation/diagnostics.py), evaluation only
    attention    rotary encodings: an evaluation variant's own attention, called instead of
                 rotate-then-attend as ``attention(q, k, v, encoding, positions, options, layer=l)`` with q, k
                 not yet rotated (training-free extenders: ReRoPE, SelfExtend, DCA, StreamingLLM in
                 posbench/evaluation/variants/; the layer for its sink logit or temperature);
                 None: the usual path
    window       a local window (posbench.attention.kernels.Window) for every layer that has none of its own;
                 with ``block``, a query sees the keys both leave it
    query_scale  a temperature by position: ``f(positions [L], keys_seen [L]) -> [L]`` multiplying
                 the queries (after rotation) of every layer without a window or temperature of its own (Qwen's
                 logn, Llama 4's floor-log rows; with RNoPE-SWA, logn on its global layers is SWAN-GPT's);
                 one with ``per_layer = True`` is called ``f(positions, keys_seen, layer) -> [L] or [H, 1]``
                 (+headscale's temperatures per layer and head)

    Made, a combination no kernel honours is refused (PosbenchError, one line): an extender
    (``attention``) beside ``block``, ``window``, ``query_scale`` or ``recorder`` (its kernel has none
    of them), an unknown ``kernel``, a ``block`` that is not a positive integer, a ``logit_scale`` that
    is not positive. Which kernel runs for which encoding: posbench/model/kernel_choice.py.
    """

    kernel: str = "auto"
    block: Optional[int] = None
    logit_scale: float = 1.0
    rope: Optional[tuple[Any, float]] = None  # (str | RopeScaling, factor)
    recorder: Any = None
    attention: Optional[Callable] = None
    window: Any = None
    query_scale: Any = None

    def __post_init__(self) -> None:
        if self.kernel not in ATTENTION_SETTINGS:
            raise PosbenchError(f"unknown attention kernel {self.kernel!r}; valid: {', '.join(ATTENTION_SETTINGS)}")
        if self.block is not None and (isinstance(self.block, bool) or not isinstance(self.block, int) or self.block < 1):
            raise PosbenchError(f"blockwise causal attention needs a positive integer block, got {self.block!r}")
        if not self.logit_scale > 0:
            raise PosbenchError(f"the attention temperature (logit_scale) must be positive, got {self.logit_scale!r}")
        if self.attention is not None and (given := [k for k in NOT_WITH_EXTENDER if getattr(self, k) is not None]):
            raise PosbenchError(f"a training-free extender (attention=) computes its own attention and honours no "
                                f"{NOT_WITH_EXTENDER[given[0]]} ({given[0]}=); valid beside it: kernel, logit_scale, rope")

    def replace(self, **changes) -> "AttentionOptions":
        return dataclasses.replace(self, **changes)
