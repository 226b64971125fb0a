"""posbench/tasks/common_words.py: a list of words, a few repeated more; the answer names the most frequent in
order of first appearance; a perfect model scores 1, one naming random words of the list its chance."""

import collections

import numpy as np
import pytest

from posbench.tasks import build_task
from posbench.tasks.common_words import guess_accuracy
from tests.tasks.scoring import constant, perfect, scores


def test_the_answer_names_the_most_frequent_words_in_order_of_first_appearance():
    task = build_task("common_words", {"common": 3})
    for seed, L in enumerate((96, 200, 512)):
        tokens, answer = task.example(np.random.default_rng(seed), L, None, None)
        listed, named = bytes(tokens).lstrip(b"\0").split(b"|")
        words = listed.split(b" ")
        counts = collections.Counter(words)
        top = [w for w, c in counts.items() if c == 4]
        assert len(top) == 3 and all(c == 1 for w, c in counts.items() if w not in top)
        assert named.split(b" ") == sorted(top, key=words.index) and len(tokens) == L + 1
        assert answer.sum() == len(named) and len(set(counts)) == 3 + task.uncommon(L)
    # the common words keep their count; a longer window holds more uncommon ones (as RULER)
    assert task.uncommon(512) > task.uncommon(96) > 0


def test_a_perfect_model_scores_one_and_a_random_pick_its_chance():
    task = build_task("common_words")
    assert task.chance_at(None, 64) == pytest.approx(1 / 28)  # 2 of 8 distinct words
    assert scores(task, 64, perfect) == (1.0, 1.0)
    assert scores(task, 64, constant("a"))[0] == 0.0
    assert guess_accuracy(task, 64, 6000) == pytest.approx(task.chance_at(None, 64), abs=0.008)
    assert task.chance_at(None, 1024) < task.chance_at(None, 64)  # falls with length
