"""The copy task (posbench/tasks/copy.py) repeats the string after the separator."""

import numpy as np

from posbench.tasks import build_task

TEXT = np.frombuffer(b"def f(x):\n    return x + 1\n" * 200, dtype=np.uint8)


def test_copy_repeats_the_string_after_the_separator():
    task = build_task("copy")
    tokens, answer = task.example(np.random.default_rng(3), 20, None, TEXT)
    s = bytes(tokens)
    assert s[:10] == s[11:] and s[10:11] == b"|" and answer.sum() == 10
    short, _ = task.example(np.random.default_rng(3), 20, 3, TEXT)  # training draws shorter strings, left-padded
    assert (short[:14] == 0).all() and bytes(short[14:17]) == bytes(short[18:])


def test_a_copy_example_is_padding_the_string_the_separator_and_the_string_again():
    from posbench.tasks.copy import LETTERS, SEPARATOR, Copy

    task = build_task("copy")
    assert isinstance(task, Copy) and task.chance(None) == 1 / 26 and task.min_length() == 2
    rng = np.random.default_rng(0)
    tokens, answer = task.example(rng, 16, 5, None)
    s = tokens[-5:]
    assert len(tokens) == 17 and tokens[-6] == SEPARATOR and np.array_equal(tokens[-11:-6], s) and np.isin(s, LETTERS).all()
    assert answer.tolist() == [False] * 11 + [True] * 5  # only the copy is scored
    assert all(1 <= task.train_condition(rng, 16) <= 8 for _ in range(50))
