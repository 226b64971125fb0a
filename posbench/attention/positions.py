"""Randomized positions (Ruoss et al. 2023, "Randomized Positional Encodings Boost Length
Generalization of Transformers"; reference code google-deepmind/randomized_positional_encodings):
a window of L tokens gets a sorted sample of L distinct positions from [0, M) with M >= L, so an
encoding sees positions up to M - 1 while training on short windows. The authors' code samples at
evaluation too; posbench evaluates such a model both ways (plain 0..L-1, and ``+randpos``).
"""

from __future__ import annotations

import numpy as np
import torch


def sample_positions(max_position: int, length: int, seed: int, step: int) -> torch.Tensor:
    """A sorted sample of ``length`` distinct positions from [0, max_position), reproducible from
    (seed, step): one per training step (shared by the batch), or per batch of evaluation windows."""
    rng = np.random.default_rng([seed, step, 1])
    return torch.from_numpy(np.sort(rng.choice(max_position, size=length, replace=False)))


def pose_positions(train_len: int, target: int, seed: int, step: int) -> torch.Tensor:
    """The position ids of one fine-tuning step's windows of ``train_len`` tokens, reaching ``target``."""
    rng = np.random.default_rng([seed, step, 3])
    first = int(rng.integers(1, (train_len + 1) // 2 + 1))  # random.randint(1, (len_chunk + 1) // 2)
    skip = int(rng.integers(0, max(0, target - train_len) + 1))  # random.randint(0, scaled_max - len)
    positions = np.arange(train_len)
    positions[first:] += skip
    return torch.from_numpy(positions)
