"""A recurrent layer's state across windows: passed from one training window to the next (state
passing), or reset every W tokens (the window control of a recurrent layer).

State passing (Buitrago & Gu 2025, arXiv 2507.02782; posbench/training/state_passing.py): in
training, a mixer whose ``carry`` is on starts each window from the final state of the window its
batch row read at the previous step, detached (no gradient crosses a step: truncated back-propagation
through time), and starts from zeros every ``segments`` steps, where the batch stream starts a new
stretch of text for every row. The carried state and the count of windows are the module's extra
state, so they are saved in every resume state and a resumed run continues bit for bit. In eval
mode the carry is not used: a model is scored as every other, from a zero state.

The window control (the evaluation's ``+swaL`` / ``+chunkW`` rows, AttentionOptions.window): an
attention layer with a window of W keys sees at most the last W tokens; a recurrent layer's
counterpart is a state reset every W tokens (``windowed``): the sequence is cut into blocks of W,
each read from a zero state, so that token t is mixed with the tokens of its block only (the
``chunked`` window exactly; for ``sliding`` the same blocks: at most W tokens each, as the sliding
window's at most W keys, not the W most recent, which a recurrence cannot drop without reading
every window again). The blocks run side by side as batch rows: no loop.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import nn


class StateCarry(nn.Module):
    """The state one mixer passes from a training window to the next (off while ``segments`` is 0)."""

    def __init__(self):
        super().__init__()
        self.segments = 0  # windows per stretch of text (the state is reset at each stretch's first); 0: off
        self.count = 0  # training windows read so far
        self.state: Optional[tuple[torch.Tensor, ...]] = None

    def start(self, segments: int) -> None:
        self.segments, self.count, self.state = segments, 0, None

    @property
    def on(self) -> bool:
        return self.segments > 0

    def run(self, mixer, x: torch.Tensor) -> torch.Tensor:
        """The mixer's output on x from the carried state (zeros at a stretch's first window); keeps
        the final state, detached, for the next window."""
        fresh = self.count % self.segments == 0 or self.state is None
        y, final = mixer.forward_with_state(x, None if fresh else self.state)
        self.state, self.count = tuple(t.detach() for t in final), self.count + 1
        return y

    # saved with the model (and so in every resume state); a checkpoint without it loads as "off"
    def get_extra_state(self) -> dict:
        return {"segments": self.segments, "count": self.count,
                "state": None if self.state is None else list(self.state)}

    def set_extra_state(self, extra: Any) -> None:
        self.segments, self.count = int(extra["segments"]), int(extra["count"])
        self.state = None if extra["state"] is None else tuple(extra["state"])

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        # a checkpoint saved before mixers had a carry has no key: it loads as a carry that is off
        if prefix + "_extra_state" in state_dict:
            self.set_extra_state(state_dict[prefix + "_extra_state"])

    def extra_repr(self) -> str:
        return f"segments={self.segments}" if self.on else "off"


def windowed(mixer, x: torch.Tensor, size: int) -> torch.Tensor:
    """The mixer with its state reset every ``size`` tokens: x [B, L, D] cut into blocks of size
    (the last padded at its end, which changes nothing before the padding: the layer is causal),
    each block a batch row read from zeros."""
    B, L, D = x.shape
    if L <= size:
        return mixer(x)
    pad = -L % size
    blocks = F.pad(x, (0, 0, 0, pad)).reshape(B * ((L + pad) // size), size, D)
    return mixer(blocks).reshape(B, L + pad, -1)[:, :L]


def mix(mixer, x: torch.Tensor, window=None) -> torch.Tensor:
    """What a block's mixer returns on x: with the carried state in training (state passing), with a
    state reset every ``window.size`` tokens under a window (the window control), else as it is."""
    if mixer.training and mixer.carry.on:
        return mixer.carry.run(mixer, x)
    if window is not None:
        return windowed(mixer, x, window.size)
    return mixer(x)
