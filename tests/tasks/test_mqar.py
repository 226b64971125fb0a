"""MQAR (posbench/tasks/mqar.py): Zoology's values, answers only as labels, and the no-binding baseline."""

import math

import numpy as np
import pytest

from posbench.tasks import build_task
from posbench.tasks.mqar import KEYS, VALUES

TEXT = np.frombuffer(b"def f(x):\n    return x + 1\n" * 200, dtype=np.uint8)


def test_mqar_follows_zoology_values_without_replacement_answers_only_as_labels_random_filler():
    task = build_task("mqar", {"pairs": 4, "eval_pairs": [4]})
    tokens, answer, targets = task.example(np.random.default_rng(2), 40, 4, TEXT)
    pairs = dict(zip(tokens[0:8:2], tokens[1:8:2]))
    assert set(pairs) <= set(KEYS) and set(pairs.values()) <= set(VALUES) and len(pairs) == 4
    assert len(set(pairs.values())) == 4  # values without replacement
    filler = np.delete(tokens[8:], np.arange(len(tokens) - 8 - 8, len(tokens) - 8, 2))
    assert ((filler >= 1) & (filler < 128)).all() and len(set(filler)) > 5  # random non-query tokens
    queries = tokens[-8::2]
    assert sorted(queries) == sorted(pairs)  # every key asked once, closing the window
    assert list(targets[answer]) == [pairs[k] for k in queries] and answer.sum() == 4
    assert not set(tokens[8:]) & set(VALUES)  # no value after the pairs: the answer is a label only
    assert (targets[~answer] == tokens[1:][~answer]).all()  # elsewhere the targets are the next inputs
    batch = task.batch(np.random.default_rng(2), 2, 40, TEXT, condition=4)
    assert (batch.y[batch.answer] >= 192).all() and not (batch.x[:, 8:] >= 192).any()


def test_mqar_no_binding_baseline_is_what_a_model_answering_unused_window_values_scores():
    """Why the baseline is 1/n: a model that answers each query with a random value of the window it has
    not used yet (54% on average on the old generator) scores the baseline the report shows, 1/n."""
    from posbench.tasks.mqar import no_binding_accuracy

    task = build_task("mqar")
    for n in (2, 4, 8):
        simulated = no_binding_accuracy(task, 64, n, examples=4000, seed=n)
        assert simulated == pytest.approx(task.chance(n), abs=3 * math.sqrt(task.chance(n) / (4000 * n)) + 0.005)
