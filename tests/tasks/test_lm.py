"""Language modelling as a task (posbench/tasks/lm.py): random windows of the corpus with every target
scored, and perplexity records."""

import numpy as np
import torch

from posbench.data.batches import sample_batch
from posbench.tasks import LM, build_task
from posbench.tasks.lm import LanguageModelling


def test_language_modelling_scores_every_target_of_random_windows():
    task = build_task(LM)
    assert isinstance(task, LanguageModelling) and task.record_kind == "perplexity" and task.source == "text"
    tokens = (np.arange(5000) % 251).astype(np.uint8)
    x, y, scored = task.training_batch(tokens, 4, 16, 0, 3)
    want_x, want_y = sample_batch(tokens, 4, 16, 0, 3)
    assert scored is None and torch.equal(x, want_x) and torch.equal(y, want_y)
    logits = torch.randn(4, 16, 256)
    torch.testing.assert_close(task.loss(logits, y, scored), torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten()))
