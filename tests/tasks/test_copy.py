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
