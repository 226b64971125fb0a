"""The passkey task (posbench/tasks/passkey.py): the key at its depth, scored alone, at its distance."""

import numpy as np
import pytest

from posbench.tasks import build_task
from posbench.tasks.passkey import NEEDLE, QUESTION

TEXT = np.frombuffer(b"def f(x):\n    return x + 1\n" * 200, dtype=np.uint8)


@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
def test_passkey_hides_the_key_at_its_depth_and_scores_only_the_key(depth):
    task = build_task("passkey", {"digits": 4})
    tokens, answer = task.example(np.random.default_rng(1), 64, depth, TEXT)
    s = bytes(tokens)
    assert len(tokens) == 65 and answer.sum() == 4 and answer[-4:].all()
    key = s[-4:]
    assert key.isdigit() and s.endswith(QUESTION + key)
    at = s.index(NEEDLE + key + b"|")
    filler = 65 - (len(NEEDLE) + 5) - (len(QUESTION) + 4)
    assert at == round(depth * filler)  # depth: the fraction of the filler before the needle
    # the scored targets (inputs shifted by one) are exactly the key's digits
    assert bytes(tokens[1:][answer]) == key


def test_passkey_answer_distance_is_where_the_needle_lies():
    """task.answer_distance: from the position that predicts the question's first key digit back to
    the needle's first key digit, read off real examples at every depth."""
    import numpy as np

    from posbench.tasks import TASKS

    task = TASKS.get("passkey")(TASKS.get("passkey").Params())
    text = np.frombuffer(b"lorem ipsum dolor sit amet " * 40, np.uint8)
    for length in (64, 100):
        for depth in (0.0, 0.25, 0.5, 0.75, 1.0):
            tokens, answer = task.example(np.random.default_rng(0), length, depth, text)
            first_answer = int(np.flatnonzero(answer)[0])  # targets[t] = tokens[t + 1], predicted at input t
            needle_digit = bytes(tokens).index(b"|key=") + len(b"|key=")
            assert task.answer_distance(length, depth) == first_answer - needle_digit
    assert [task.answer_distance(64, d) for d in (0.0, 0.25, 0.5, 0.75, 1.0)] == [54, 43, 32, 21, 10]


def test_the_key_digits_are_uniform_over_0_to_9_and_independent_of_position():
    """Chance (10^-k) assumes every digit is equally likely at every key position: over 2,000 keys each
    of the ten digits appears at each position, none far from a tenth (a chi-square test at 0.1%),
    so a generator that never drew a 9, or always drew the same first digit, fails."""
    from scipy import stats

    task = build_task("passkey", {"digits": 4})
    rng = np.random.default_rng(7)
    keys = np.array([list(bytes(task.example(rng, 64, 0.5, TEXT)[0][-4:])) for _ in range(2000)]) - ord("0")
    for position in range(4):
        counts = np.bincount(keys[:, position], minlength=10)
        assert len(counts) == 10 and counts.min() > 0
        assert stats.chisquare(counts).pvalue > 1e-3, (position, counts)
