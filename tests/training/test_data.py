"""posbench/training/data.py: positions come from the extension method, the random-positions sample or
0..length-1, in that order; validation reads fixed windows."""

import numpy as np
import torch

from posbench.training.data import TrainingData
from posbench.training.trainer import TrainConfig

TEXT = np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 200, dtype=np.uint8)
CPU = torch.device("cpu")


def test_positions_come_from_the_extension_else_the_random_sample_else_the_window():
    plain = TrainConfig(batch_size=2)
    sampled = TrainConfig(batch_size=2, random_positions=100)
    assert torch.equal(TrainingData(TEXT, TEXT, 16, 0).batch(0, plain, CPU)[3], torch.arange(16))
    random = TrainingData(TEXT, TEXT, 16, 0).batch(0, sampled, CPU)[3]
    assert random.max() < 100 and not torch.equal(random, torch.arange(16)) and bool((random.diff() > 0).all())
    own = TrainingData(TEXT, TEXT, 16, 0, positions_at=lambda step: torch.arange(16) * (step + 2))
    assert torch.equal(own.batch(1, sampled, CPU)[3], torch.arange(16) * 3)


def test_validation_reads_the_same_fixed_windows_whatever_the_seed():
    tc = TrainConfig(batch_size=2, val_batches=3)
    a = list(TrainingData(TEXT, TEXT, 16, 0).validation_batches(tc))
    b = list(TrainingData(TEXT, TEXT, 16, 7).validation_batches(tc))
    assert len(a) == 3 and all(torch.equal(x[0], y[0]) for x, y in zip(a, b))
