"""MQAR (posbench/tasks/mqar.py): Zoology's values, answers only as labels, and the no-binding baseline."""

import math

import numpy as np
import torch
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


def test_a_small_alphabet_draws_keys_and_values_from_its_first_symbols_only():
    task = build_task("mqar", {"pairs": 4, "eval_pairs": [4], "alphabet": 8})
    rng = np.random.default_rng(0)
    for _ in range(50):
        tokens, answer, targets = task.example(rng, 40, 4, TEXT)
        assert set(tokens[0:8:2]) <= set(KEYS[:8]) and set(targets[answer]) <= set(VALUES[:8])


def test_zoology_placement_applies_to_training_examples_and_evaluation_closes_the_window():
    """train_queries=zoology: the training queries sit in the gap, mostly near the pairs (Zoology's power
    law), each answered at its own position; an evaluation example (``example``) still closes the window."""
    task = build_task("mqar", {"pairs": 4, "eval_pairs": [4], "train_queries": "zoology"})
    x, y, answer = task.training_batch(TEXT, 256, 64, seed=0, step=0)
    first = []
    for row in range(256):
        at = np.flatnonzero(answer[row].numpy())
        n = len(at)
        keys = dict(zip(x[row, 0:2 * n:2].tolist(), x[row, 1:2 * n:2].tolist()))
        assert all(x[row, p].item() in keys and y[row, p].item() == keys[x[row, p].item()] for p in at)
        assert ((at - 2 * n) % 2 == 0).all()  # on the gap's two-token slots
        first.append(at.min() - 2 * n)
    assert np.median(first) < 10  # a power law with a = 0.01: most queries right after the pairs
    tokens, answer, _ = task.example(np.random.default_rng(1), 64, 4, TEXT)
    assert list(np.flatnonzero(answer)) == [57, 59, 61, 63]  # evaluation: the queries close the window


def test_the_curriculum_raises_the_pairs_by_stage_and_then_trains_at_pairs():
    task = build_task("mqar", {"pairs": 16, "eval_pairs": [4], "curriculum": [4, 8], "stage_steps": 100})
    assert [task.pairs_at(s) for s in (0, 99, 100, 199, 200, 10_000)] == [4, 4, 8, 8, 16, 16]
    most = [int(task.training_batch(TEXT, 64, 64, seed=0, step=s)[2].sum(1).max()) for s in (0, 150, 250)]
    assert most[0] <= 4 and 4 < most[1] <= 8 and 8 < most[2] <= 16
    assert task.params.pairs == 16  # the task itself is not changed by a stage


@pytest.mark.parametrize("params,message", [
    ({"pairs": 20, "alphabet": 16}, "task pairs must be in 1..16 (distinct keys of task.alphabet 16), got 20"),
    ({"alphabet": 65}, "task.alphabet must be in 1..64"),
    ({"pairs": 8, "curriculum": [4, 16]}, "task.curriculum must rise to task.pairs (8), got [4, 16]"),
    ({"train_queries": "middle"}, "task.train_queries must be one of end, zoology, got 'middle'"),
])
def test_a_setting_the_generator_cannot_hold_is_one_line(params, message):
    from posbench.core.errors import PosbenchError

    with pytest.raises(PosbenchError) as e:
        build_task("mqar", params)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_the_default_generator_is_the_one_the_committed_studies_trained_on():
    """The levers default to the earlier generator, draw for draw: a training batch's bytes are pinned
    (checked against the generator before the levers existed), so the committed MQAR runs keep their ids'
    meaning; the validation batches are the task as evaluated, whatever the curriculum."""
    import hashlib

    x, y, a = build_task("mqar").training_batch(TEXT, 8, 64, seed=3, step=5)
    digest = hashlib.sha256(x.numpy().tobytes() + y.numpy().tobytes() + a.numpy().tobytes()).hexdigest()[:16]
    assert digest == "cc658b2acd71f30e"
    staged = build_task("mqar", {"pairs": 8, "curriculum": [2], "stage_steps": 1000, "train_queries": "zoology"})
    plain = build_task("mqar", {"pairs": 8})
    for i in range(3):
        for got, want in zip(staged.validation_batch(TEXT, 16, 64, 99, i), plain.training_batch(TEXT, 16, 64, 99, i)):
            assert torch.equal(got, want)
