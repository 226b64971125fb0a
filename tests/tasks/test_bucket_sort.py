"""posbench/tasks/bucket_sort.py: the string over 0..4 sorted; a perfect model scores 1, a constant one 1/5."""

import numpy as np
import pytest

from posbench.tasks import build_task
from tests.tasks.scoring import constant, perfect, scores


def test_the_target_is_the_string_sorted():
    task = build_task("bucket_sort")
    tokens, answer = task.example(np.random.default_rng(0), 40, 9, None)
    x, y = bytes(tokens).lstrip(b"\0").split(b"|")
    assert len(x) == 9 and y == bytes(sorted(x)) and set(x) <= set(b"01234") and answer.sum() == 9


def test_a_perfect_model_scores_one_and_a_constant_one_chance():
    task = build_task("bucket_sort")
    assert task.chance(None) == pytest.approx(0.2)
    assert scores(task, 128, perfect) == (1.0, 1.0)
    for c in "03":  # any constant symbol: its share of the sorted string, 1/5 in expectation
        assert scores(task, 128, constant(c))[1] == pytest.approx(0.2, abs=0.02)
