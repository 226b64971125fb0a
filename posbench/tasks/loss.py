"""The training objective of a task: cross-entropy on the scored targets (a task's answers), or on every
target (language modelling), or both (``task.loss: mixed``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def token_loss(logits: torch.Tensor, y: torch.Tensor, scored: torch.Tensor | None, mixed: bool = False) -> torch.Tensor:
    """Mean cross-entropy over the scored targets (every target when ``scored`` is None); ``mixed``:
    plus the mean over every target, the language-model loss on the text around a task's answers."""
    def every() -> torch.Tensor:
        return F.cross_entropy(logits.float().flatten(0, 1), y.flatten())

    if scored is None:
        return every()
    answers = F.cross_entropy(logits.float()[scored], y[scored])
    return answers + every() if mixed else answers
