"""posbench/tasks/binary_addition.py: the little-endian sum and the termination token, as the reference's
examples; a perfect model scores 1, a constant '1' the chance of 1/2."""

import numpy as np
import pytest

from posbench.tasks import build_task
from posbench.tasks.binary_addition import little_endian
from tests.tasks.scoring import constant, perfect, scores


def test_the_reference_examples():
    # the reference's docstring: 001 + 01101 = 01011 (4 + 22 = 26), 1001 + 000001 = 100101 (9 + 32 = 41)
    assert little_endian(4, 3) == b"001" and little_endian(22, 5) == b"01101" and little_endian(26) == b"01011"
    assert little_endian(9, 4) + b"+" + little_endian(32, 6) == b"1001+000001" and little_endian(41) == b"100101"


def test_the_target_is_the_sum_of_the_two_numbers():
    task = build_task("binary_addition")
    for seed in range(30):
        n = 3 + seed
        tokens, answer = task.example(np.random.default_rng(seed), 80, n, None)
        x, y = bytes(tokens).lstrip(b"\0").split(b"|")
        a, b = x.split(b"+")
        assert len(x) == n and y.endswith(b"=") and answer.sum() == len(y)
        assert int(y[:-1][::-1], 2) == int(a[::-1], 2) + int(b[::-1], 2) and y[-2:-1] == b"1"  # no leading zero
    assert task.max_input(64) == 32 and task.min_length() == 7


def test_a_perfect_model_scores_one_and_a_constant_one_chance():
    task = build_task("binary_addition")
    assert scores(task, 256, perfect) == (1.0, 1.0)
    assert scores(task, 256, constant("1"), examples=1000)[1] == pytest.approx(task.chance(None), abs=0.03)
