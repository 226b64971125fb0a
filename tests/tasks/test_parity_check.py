"""posbench/tasks/parity_check.py: the parity of the 1s; a perfect model scores 1, a constant one 1/2."""

import numpy as np
import pytest

from posbench.tasks import build_task
from tests.tasks.scoring import constant, perfect, scores


def test_the_target_is_the_parity_of_the_ones():
    task = build_task("parity_check")
    for seed in range(20):
        tokens, answer = task.example(np.random.default_rng(seed), 32, 7, None)
        s = bytes(tokens).lstrip(b"\0")
        x, y = s.split(b"|")
        assert len(x) == 7 and y == str(x.count(b"1") % 2).encode() and answer.sum() == 1 and answer[-1]
    assert task.level == "regular" and task.chance(None) == 0.5


def test_a_perfect_model_scores_one_and_a_constant_one_chance():
    task = build_task("parity_check")
    assert scores(task, 128, perfect) == (1.0, 1.0)
    assert scores(task, 128, constant("1"), examples=2000)[1] == pytest.approx(task.chance(None), abs=0.04)
