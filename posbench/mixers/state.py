"""A recurrent layer's state across windows: passed from one training window to the next (state
passing), or started again so that every token reads at least W tokens (the window control).

State passing (Buitrago & Gu 2025, arXiv 2507.02782; posbench/training/state_passing.py): in
training, a mixer whose ``carry`` is on starts each window from the final state of the window its
batch row read at the previous step, detached (no gradient crosses a step: truncated back-propagation
through time), and starts from zeros every ``segments`` steps, where the batch stream starts a new
stretch of text for every row. The carried state and the count of windows are the module's extra
state, so they are saved in every resume state and a resumed run continues bit for bit. In eval
mode the carry is not used: a model is scored as every other, from a zero state.

The window control (the evaluation's ``+swaL`` / ``+chunkW`` rows, AttentionOptions.window) must
give a recurrent layer what it gives an attention layer. Under a ``sliding`` window of W keys an
attention query sees exactly W tokens, itself included, once t >= W - 1; a recurrence cannot drop
one token from its state, so its counterpart is bounded (``overlapping``): token t is read by a pass
from a zero state that started between W - 1 and 2W - 2 tokens before it, i.e. it is conditioned on
between W and 2W - 1 tokens, itself included (the first W tokens on all the tokens before them, as
the sliding window's). The passes are blocks of 2W - 1 tokens starting every W tokens, each keeping
its last W outputs: about twice a full pass's work, batched as rows (no loop). That makes the
control a window of *at least* W tokens (up to 2W - 1): it never takes context away below W, so a
far-context gain measured against it comes from context at least W tokens back, and the control can
only understate it (a token late in its block keeps up to 2W - 1 tokens).

A ``chunked`` window is a state reset every W tokens (``windowed``): token t sees the tokens of its
own block of W only (0 to W - 1 before it), as chunked attention does. That is the 1x condition,
not a window of W: it is kept for rows that ask for chunks, never as the far-context control (an
earlier control reset the state every W tokens under a sliding window too; its "far gain" was
mostly the context the resets took away).
"""

from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import nn

from posbench.core.errors import PosbenchError


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
    """The mixer with its state reset every ``size`` tokens (the chunked window): x [B, L, D] cut into blocks of size
    (the last padded at its end, which changes nothing before the padding: the layer is causal),
    each block a batch row read from zeros."""
    B, L, D = x.shape
    if L <= size:
        return mixer(x)
    pad = -L % size
    blocks = F.pad(x, (0, 0, 0, pad)).reshape(B * ((L + pad) // size), size, D)
    return mixer(blocks).reshape(B, L + pad, -1)[:, :L]


def overlapping(mixer, x: torch.Tensor, size: int) -> torch.Tensor:
    """The mixer with every token read by a pass that began between ``size - 1`` and ``2 size - 2``
    tokens before it (between size and 2 size - 1 tokens seen, itself included); the first ``size``
    tokens from the start, as a full pass. x [B, L, D]: blocks of 2 size - 1 tokens starting at
    1, size + 1, 2 size + 1, ..., each keeping its last ``size`` outputs (the block from k size + 1
    keeps tokens (k + 1) size ... (k + 2) size - 1)."""
    B, L, D = x.shape
    if L <= size:
        return mixer(x)
    head = mixer(x[:, :size])  # [B, size, D]: tokens 0 .. size - 1 see every token before them
    pad = -L % size  # padding at the end changes nothing before it (the layer is causal)
    tail = F.pad(x, (0, 0, 0, pad))[:, 1:]  # [B, L + pad - 1, D]
    # [B, n, D, 2 size - 1] -> [B * n, 2 size - 1, D]: block k covers tokens k size + 1 ... (k + 2) size - 1
    blocks = tail.unfold(1, 2 * size - 1, size).permute(0, 1, 3, 2)
    n = blocks.shape[1]
    out = mixer(blocks.reshape(B * n, 2 * size - 1, D))[:, size - 1:]  # [B * n, size, D]
    return torch.cat([head, out.reshape(B, n * size, -1)], 1)[:, :L]


def mix(mixer, x: torch.Tensor, window=None) -> torch.Tensor:
    """What a block's mixer returns on x: with the carried state in training (state passing), under
    a window its counterpart of the attention window (a sliding window: every token conditioned on
    at least ``window.size`` tokens; a chunked one: a state reset every ``window.size`` tokens), else
    as it is."""
    if mixer.training and mixer.carry.on:
        return mixer.carry.run(mixer, x)
    if window is None:
        return mixer(x)
    if window.sinks:  # a recurrent state has no keys to keep: refused rather than silently dropped
        raise PosbenchError(f"a window with attention sinks ({window.tag}) has no form for a recurrent layer "
                            f"({type(mixer).__name__}); sinks apply to attention layers only")
    if window.kind == "chunked":
        return windowed(mixer, x, window.size)
    return overlapping(mixer, x, window.size)
