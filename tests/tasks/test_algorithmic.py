"""posbench/tasks/algorithmic.py: the decoder layout (PAD, input, separator, target), the longest input a
window holds, and the evaluation bands that tile every input length beyond training."""

import numpy as np

from posbench.tasks import build_task
from posbench.tasks.algorithmic import LEVELS, SEPARATOR


def test_inputs_fill_the_window_and_training_draws_every_length_up_to_n():
    rev, dup, par = build_task("reverse_string"), build_task("duplicate_string"), build_task("parity_check")
    assert (rev.max_input(64), dup.max_input(64), par.max_input(64)) == (32, 21, 63)  # 2n+1, 3n+1, n+2 <= 65 tokens
    rng = np.random.default_rng(0)
    assert {rev.train_condition(rng, 64) for _ in range(2000)} == set(range(1, 33))  # uniform 1..N, as the references
    tokens, answer = rev.example(rng, 64, 5, None)
    s = bytes(tokens)
    assert len(tokens) == 65 and s[:54] == bytes(54) and s[59] == SEPARATOR and s[60:] == s[54:59][::-1]
    assert answer.tolist() == [False] * 59 + [True] * 5  # the predictions of the target tokens only


def test_evaluation_bands_tile_every_length_beyond_training_once():
    """At 2x, 4x, 8x, 16x the bands N+1..2N, 2N+1..4N, ... cover every input length up to 16N once; an
    evaluation example's input lies in its window's band."""
    for name in ("parity_check", "reverse_string", "duplicate_string", "bucket_sort", "binary_addition"):
        task = build_task(name)
        covered = [n for L in (128, 256, 512, 1024) for n in range(task.band(L)[0] + 1, task.band(L)[1] + 1)]
        assert covered == list(range(task.max_input(64) + 1, task.max_input(1024) + 1)), name
        rng = np.random.default_rng(1)
        for _ in range(20):
            tokens, answer = task.example(rng, 256, None, None)
            n = int(np.flatnonzero(tokens == SEPARATOR)[-1] - np.flatnonzero(tokens != 0)[0])
            lo, hi = task.band(256)
            assert lo < n <= hi and task.level in LEVELS
