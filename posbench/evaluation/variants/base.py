"""The interface of an evaluation variant: it asks one forward pass to do something differently
(posbench/attention/options.py: ``AttentionOptions``).

A variant scores the same weights another way and is its own report row (``rope+yarn@16x``,
``xpos+bca``, ``alibi+temp0.1``). It never changes the model or the encoding: it turns the
trained configuration's options into its own, per forward, so nothing set for one row can leak
into the next (or into a checkpoint).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError


class Variant:
    """Base class of an evaluation variant. Subclasses declare ``Params`` (checked like an
    encoding's), and override what they change:

    * ``suffix()``             the row-name suffix (rendered in one place: Row.name)
    * ``applies_to(encoding)`` whether an encoding has this row (default: every encoding); a row
      that would equal the encoding's own row by construction does not apply
    * ``options(opts, length, train_len)`` the forward's AttentionOptions at windows of ``length``
    * ``positions(length, max_position, batch)`` explicit positions, or None for 0..L-1
    * ``fit(model, ev, length, device)`` what it learns at ``length`` before the row is scored there

    and, for the report, ``linestyle`` (a matplotlib line style; the row keeps its encoding's
    colour) or ``colour`` (a colour of its own, e.g. each RoPE scaling), and ``window`` (True for a
    variant that limits what a query sees: its rows are controls, listed apart from the others)."""

    name = "variant"
    linestyle = "-."
    colour: str | None = None
    window = False  # an evaluation-time attention window: its rows are controls, reported apart
    # applies_to depends on the encoding alone, not on the row's parameters: the report can ask it
    # again of a recorded row, and leaves out rows recorded by older code for encodings they do not
    # apply to (report/load.py)
    encoding_decides = False

    @dataclass
    class Params:
        pass

    def __init__(self, params: Any = None):
        self.params = params if params is not None else self.Params()

    def suffix(self) -> str:
        return f"+{self.name}"

    def applies_to(self, encoding) -> bool:
        return True

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        return opts

    def positions(self, length: int, max_position: int, batch: int):
        return None

    def undefined_reason(self, length: int, max_position: int) -> str | None:
        """Why this row cannot be scored at ``length`` (beyond the encoding's own reasons)."""
        return None

    def fit(self, model, ev, length: int, device) -> None:
        """Before the row is scored at ``length``: fit what the variant learns there with the model
        frozen (HeadScale's per-head temperatures), on ``ev.calibration`` (the training split, never
        the scored text). Default: nothing to fit."""
        return None

    def fit_record(self, length: int) -> dict | None:
        """What ``fit`` chose at ``length``, for the records of the row there (+tuned's search); None: nothing
        to record (the default, and HeadScale's scales, which are logged)."""
        return None

    def undefined_for(self, encoding, length: int) -> str | None:
        """The same, for a variant that needs to know the model (its shape, its encoding's Params):
        by default ``undefined_reason``."""
        return self.undefined_reason(length, encoding.shape.max_position)

    def record(self) -> dict:
        """What this variant is, for the records (so that no reader parses a row's name)."""
        return {"variant": self.name, **dataclasses.asdict(self.params)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.params})"


class RowTemperature(Variant):
    """A temperature on the queries of the layers without a window or a temperature of their own
    (model.temper): logn, floor-log. It applies to an encoding with at least one such layer; on
    one without (RoPE with a window in every layer, iRoPE, SSMax) its row would equal the plain row."""

    encoding_decides = True

    def applies_to(self, encoding) -> bool:
        return encoding.takes_row_temperature()


def calibration_of(ev, length: int, what: str) -> np.ndarray:
    """The training split a variant fits on at ``length`` (``ev.calibration``, never the scored text);
    refused in one line, naming ``what`` the variant does there, where it holds no window of length + 1."""
    if ev.calibration is None or len(ev.calibration) < length + 2:
        have = 0 if ev.calibration is None else len(ev.calibration)
        raise PosbenchError(f"{what} at {length} tokens on the training split, which has {have} tokens here; "
                            f"it needs more than {length + 1}")
    return np.asarray(ev.calibration)


def split_windows(tokens: np.ndarray, length: int, n: int, seed: list[int]) -> np.ndarray:
    """n windows of length + 1 tokens (inputs and their next tokens) at random places of ``tokens``,
    drawn with ``seed``: [n, length + 1], read from the split in place."""
    starts = np.random.default_rng(seed).integers(0, len(tokens) - length - 1, size=n)
    return tokens[starts[:, None] + np.arange(length + 1)[None, :]]
