"""posbench/tasks/reverse_string.py: the string reversed; a perfect model scores 1, a constant one 1/2."""

import numpy as np
import pytest

from posbench.tasks import build_task
from tests.tasks.scoring import constant, perfect, scores


def test_the_target_is_the_string_reversed():
    task = build_task("reverse_string")
    tokens, answer = task.example(np.random.default_rng(0), 20, 6, None)
    x, y = bytes(tokens).lstrip(b"\0").split(b"|")
    assert len(x) == 6 and y == x[::-1] and set(x) <= set(b"01") and answer.sum() == 6
    assert task.level == "context-free"


def test_a_perfect_model_scores_one_and_a_constant_one_chance():
    task = build_task("reverse_string")
    assert scores(task, 128, perfect) == (1.0, 1.0)
    exact, token = scores(task, 128, constant("0"))
    assert token == pytest.approx(task.chance(None), abs=0.02) and exact == 0.0
