"""posbench/tasks/duplicate_string.py: the string twice; a perfect model scores 1, a constant one 1/2."""

import numpy as np
import pytest

from posbench.tasks import build_task
from tests.tasks.scoring import constant, perfect, scores


def test_the_target_is_the_string_twice():
    task = build_task("duplicate_string")
    tokens, answer = task.example(np.random.default_rng(0), 30, 4, None)
    x, y = bytes(tokens).lstrip(b"\0").split(b"|")
    assert len(x) == 4 and y == x + x and answer.sum() == 8 and len(tokens) == 31
    assert task.level == "context-sensitive" and task.max_input(30) == 10


def test_a_perfect_model_scores_one_and_a_constant_one_chance():
    task = build_task("duplicate_string")
    assert scores(task, 128, perfect) == (1.0, 1.0)
    assert scores(task, 128, constant("1"))[1] == pytest.approx(task.chance(None), abs=0.02)
