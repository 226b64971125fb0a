"""Training batches of language modelling: random windows of the token stream, drawn from (seed,
step) alone, so a resumed run sees the same batches."""

from __future__ import annotations

import numpy as np
import torch

from posbench.core.errors import PosbenchError


def sample_batch(tokens: np.ndarray, batch_size: int, length: int, seed: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of ``length + 1`` tokens -> (inputs, targets), each [batch_size, length].

    The windows depend only on (seed, step), so a resumed run sees exactly the batches it would
    have seen, with no data-loader state to save.
    """
    if len(tokens) < length + 2:
        raise PosbenchError(f"training split has {len(tokens)} tokens, too few for windows of {length + 1}")
    rng = np.random.default_rng([seed, step])
    starts = rng.integers(0, len(tokens) - length - 1, size=batch_size)
    windows = torch.from_numpy(tokens[starts[:, None] + np.arange(length + 1)].astype(np.int64))
    return windows[:, :-1], windows[:, 1:]


def stream_batch(tokens: np.ndarray, batch_size: int, length: int, segments: int, seed: int,
                 step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows that continue each other from step to step: row b of step s is the (s mod segments)-th
    window of ``length`` tokens of a stretch of ``segments x length`` consecutive tokens, a new random
    stretch per row every ``segments`` steps -> (inputs, targets), each [batch_size, length].

    The batch stream of state passing (posbench/training/state_passing.py): a recurrent layer that
    starts a window from the state the previous step's window of its row ended in reads the stretch as
    one text. Like ``sample_batch``, a function of (seed, step) alone: a resumed run sees the same
    batches. The stretches are drawn from (seed, step // segments), so they are not sample_batch's."""
    span = segments * length
    if len(tokens) < span + 2:
        raise PosbenchError(f"training split has {len(tokens)} tokens, too few for stretches of {segments} windows "
                            f"of {length} tokens ({span + 1})")
    stretch, i = divmod(step, segments)
    rng = np.random.default_rng([seed, stretch, segments])
    starts = rng.integers(0, len(tokens) - span - 1, size=batch_size) + i * length
    windows = torch.from_numpy(tokens[starts[:, None] + np.arange(length + 1)].astype(np.int64))
    return windows[:, :-1], windows[:, 1:]
