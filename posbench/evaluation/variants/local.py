"""Rows ``<encoding>+swa<W>`` / ``+chunk<W>``: a local window at evaluation, for any encoding.

Every layer without a window of its own attends within a sliding window of W keys (or within
chunks of W tokens), by index, as a model trained with a window does (posbench/encodings/layers.py);
W defaults to the training length. A control beside the windowed presets: how much of a method's
behaviour at 16x is the window's, and whether a flat model uses context past train_len at all (the
report's far-context gain). Every kernel takes it: the relative encodings (Shaw, Transformer-XL)
and stick-breaking, which compute their own attention, hide the keys outside the window as the
softmax kernels do.

``sinks`` = k > 0 (rows ``+swaL+sink<k>``): the sink + window protocol. Every query also sees the
first k tokens of the evaluated window beside its sliding window, StreamingLLM's attention sinks (Xiao et al. 2024,
arXiv 2309.17453: k = 4; mit-han-lab/streaming-llm ``StartRecentKVCache``), for any encoding. Unlike
the reference (and posbench's ``streaming`` variant, RoPE only), no key is moved: each keeps its
position by index, so a sink is read at its true distance (up to 16 x train_len at 16x) and the row
asks whether a model that keeps the first tokens in view does better than its window alone; k + the
window's keys are seen, k more than ``+swaL``. A recurrent layer has no keys to keep: a hybrid's
row is refused in one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from posbench.attention.kernels import Window
from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.core.params import at_least, param, positive
from posbench.evaluation.variants import register
from posbench.evaluation.variants.base import Variant

# the suffix of the far-context control: a sliding window of train_len keys (the default settings);
# the report pairs each row ``x`` with ``x+swaL`` (report/analysis/tables.py far_control, report/key_tokens/frames.py)
WINDOW_CONTROL = "+swaL"


@register("local")
class LocalWindow(Variant):
    window = True  # a control: the report lists its rows apart from the unwindowed ones

    @dataclass
    class Params:
        kind: str = "sliding"
        size: Optional[int] = param(None, positive)  # null: train_len
        sinks: int = param(0, at_least(0))  # the first k keys seen beside the window (0: none)

        def check(self) -> None:
            if self.kind not in Window.KINDS:
                raise PosbenchError(f"variant local: kind must be one of {', '.join(Window.KINDS)}, got {self.kind!r}")
            if self.size is not None and self.sinks >= self.size:
                raise PosbenchError(f"variant local: sinks must be below the window's size={self.size} "
                                    f"(the sinks sit beside its keys), got sinks={self.sinks}")

    def suffix(self) -> str:
        kind = "swa" if self.params.kind == "sliding" else "chunk"
        sinks = f"+sink{self.params.sinks}" if self.params.sinks else ""
        return f"+{kind}{self.params.size or 'L'}{sinks}"

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        size = self.params.size or train_len
        if self.params.sinks >= size:
            raise PosbenchError(f"variant local: sinks must be below the window's size={size} (train_len), "
                                f"got sinks={self.params.sinks}")
        return opts.replace(window=Window(self.params.kind, size, self.params.sinks))

    def record(self) -> dict:
        record = super().record()
        if not self.params.sinks:  # a window without sinks records what it always recorded
            record.pop("sinks")
        return record
