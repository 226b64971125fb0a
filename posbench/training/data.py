"""What a run's steps read: its token splits, window, seed, task and positions, bundled once.

Every batch depends only on (seed, step), so a killed run resumes bit for bit with nothing of a data
loader saved, and a budget branch reads the batches of the run of its budget. Validation reads fixed
windows (seed ``VALIDATION_SEED``), so every validation point and every run sees the same text.

Data parallel (posbench/training/parallel.py): the global batch of a step is drawn as one process
draws it, and process ``rank`` of ``world`` keeps rows ``[rank * b, (rank + 1) * b)``, b = batch_size /
world; the gradients averaged over the processes are then those of the global batch's mean loss.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import torch

from posbench.attention.positions import sample_positions
from posbench.tasks import Task
from posbench.tasks.lm import LanguageModelling

VALIDATION_SEED = 20_240_229
Batch = tuple[torch.Tensor, torch.Tensor, "torch.Tensor | None"]


def training_batch(tokens: np.ndarray, batch_size: int, length: int, seed: int, step: int,
                   task: Task | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(inputs, targets, scored) of one step, from (seed, step) alone: the task's (None: language
    modelling, windows of the corpus with every target scored)."""
    return (task or LanguageModelling()).training_batch(tokens, batch_size, length, seed, step)


@dataclass(frozen=True)
class TrainingData:
    """The token splits a run trains and validates on, its window ``length`` (train_len, or an
    extension's fine-tune window), seed and task (language modelling by default); ``positions_at(step)``:
    the positions of a step's windows (an extension method's, e.g. PoSE's; None: 0..length-1, or
    ``train.random_positions``' sample); ``rank``/``world``: this process's share of each batch."""

    train: np.ndarray
    val: np.ndarray
    length: int
    seed: int
    task: Task = field(default_factory=LanguageModelling)
    positions_at: Callable[[int], torch.Tensor] | None = None
    rank: int = 0
    world: int = 1

    def _share(self, batch: Batch) -> Batch:
        if self.world == 1:
            return batch
        b = batch[0].shape[0] // self.world
        return tuple(None if t is None else t[self.rank * b:(self.rank + 1) * b] for t in batch)  # type: ignore[return-value]

    def batch(self, step: int, tc, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """(inputs, targets, scored, positions) of ``step`` (0-based) on ``device``; ``tc``: the
        ``train`` settings (batch size, random positions)."""
        x, y, scored = self._share(training_batch(self.train, tc.batch_size, self.length, self.seed, step, self.task))
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        scored = None if scored is None else scored.to(device, non_blocking=True)
        if self.positions_at is not None:
            positions = self.positions_at(step).to(device)
        elif tc.random_positions:
            positions = sample_positions(tc.random_positions, self.length, self.seed, step,
                                         continuous=tc.random_positions_kind == "float").to(device)
        else:
            positions = torch.arange(self.length, device=device)
        return x, y, scored, positions

    def validation_batches(self, tc) -> Iterator[Batch]:
        """The ``tc.val_batches`` fixed validation batches (the whole batch in every process)."""
        for i in range(tc.val_batches):
            yield (self.task or LanguageModelling()).validation_batch(self.val, tc.batch_size, self.length,
                                                                      VALIDATION_SEED, i)
