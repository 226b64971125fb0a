"""Rows ``<encoding>+swa<W>`` / ``+chunk<W>``: a local window at evaluation, for any encoding.

Every layer without a window of its own attends within a sliding window of W keys (or within
chunks of W tokens), by index, as a model trained with a window does (posbench/encodings/layers.py);
W defaults to the training length. A control beside the windowed presets: how much of a method's
behaviour at 16x is the window's, and whether a flat model uses context past train_len at all (the
report's far-context gain). Every kernel takes it: the relative encodings (Shaw, Transformer-XL)
and stick-breaking, which compute their own attention, hide the keys outside the window as the
softmax kernels do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from posbench.attention.kernels import Window
from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
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

        def check(self) -> None:
            if self.kind not in Window.KINDS:
                raise PosbenchError(f"variant local: kind must be one of {', '.join(Window.KINDS)}, got {self.kind!r}")

    def suffix(self) -> str:
        kind = "swa" if self.params.kind == "sliding" else "chunk"
        return f"+{kind}{self.params.size or 'L'}"

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        return opts.replace(window=Window(self.params.kind, self.params.size or train_len))
