"""posbench/training/data.py: a step's batch depends only on (seed, step); the shares of a data-parallel
run's processes are the rows of the one-process batch; positions come from the extension method, the
random-positions sample or 0..length-1, in that order."""

import numpy as np
import pytest
import torch

from posbench.tasks import build_task
from posbench.training.data import TrainingData
from posbench.training.trainer import TrainConfig

TEXT = np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 200, dtype=np.uint8)
CPU = torch.device("cpu")


def test_the_shares_of_two_processes_are_the_rows_of_the_global_batch():
    tc = TrainConfig(batch_size=4)
    for task in (build_task("lm"), build_task("passkey")):
        whole = TrainingData(TEXT, TEXT, 32, 3, task).batch(5, tc, CPU)
        shares = [TrainingData(TEXT, TEXT, 32, 3, task, rank=r, world=2).batch(5, tc, CPU) for r in (0, 1)]
        for i in range(3):
            if whole[i] is None:
                assert all(s[i] is None for s in shares)
            else:
                assert shares[0][i].shape[0] == 2 and torch.equal(torch.cat([s[i] for s in shares]), whole[i])
        assert all(torch.equal(s[3], whole[3]) for s in shares)  # every row has the step's positions


def test_positions_come_from_the_extension_else_the_random_sample_else_the_window():
    plain = TrainConfig(batch_size=2)
    sampled = TrainConfig(batch_size=2, random_positions=100)
    assert torch.equal(TrainingData(TEXT, TEXT, 16, 0).batch(0, plain, CPU)[3], torch.arange(16))
    random = TrainingData(TEXT, TEXT, 16, 0).batch(0, sampled, CPU)[3]
    assert random.max() < 100 and not torch.equal(random, torch.arange(16)) and bool((random.diff() > 0).all())
    own = TrainingData(TEXT, TEXT, 16, 0, positions_at=lambda step: torch.arange(16) * (step + 2))
    assert torch.equal(own.batch(1, sampled, CPU)[3], torch.arange(16) * 3)


def test_random_float_sampling_draws_sorted_reals_from_the_same_range_reproducibly():
    """train.random_positions_kind=float (Random Float Sampling): a step's positions are sorted reals
    from [0, random_positions), the same for the same (seed, step); integer draws stay as they were."""
    real = TrainConfig(batch_size=2, random_positions=100, random_positions_kind="float")
    data = TrainingData(TEXT, TEXT, 16, 0)
    p = data.batch(4, real, CPU)[3]
    assert p.is_floating_point() and bool((p.diff() > 0).all()) and p.min() >= 0 and p.max() < 100
    assert not torch.equal(p, p.round()) and torch.equal(p, data.batch(4, real, CPU)[3])
    assert not torch.equal(p, data.batch(5, real, CPU)[3])
    integer = data.batch(4, TrainConfig(batch_size=2, random_positions=100), CPU)[3]
    assert integer.dtype == torch.int64


@pytest.mark.parametrize("kwargs, message", [
    ({"random_positions_kind": "floats", "random_positions": 100}, r"train.random_positions_kind='floats'; valid: integer, float"),
    ({"random_positions_kind": "float"}, r"train.random_positions_kind=float draws positions from \[0, train.random_positions\): set"),
])
def test_bad_random_position_settings_are_one_line(kwargs, message):
    from posbench.core.errors import PosbenchError

    with pytest.raises(PosbenchError, match=message):
        TrainConfig(batch_size=2, **kwargs).check(16)


def test_validation_reads_the_same_fixed_windows_whatever_the_seed():
    tc = TrainConfig(batch_size=2, val_batches=3)
    a = list(TrainingData(TEXT, TEXT, 16, 0).validation_batches(tc))
    b = list(TrainingData(TEXT, TEXT, 16, 7).validation_batches(tc))
    assert len(a) == 3 and all(torch.equal(x[0], y[0]) for x, y in zip(a, b))
