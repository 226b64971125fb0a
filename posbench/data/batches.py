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
