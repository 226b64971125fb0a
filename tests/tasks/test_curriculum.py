"""posbench/tasks/curriculum.py: a task setting (MQAR's pairs, variable tracking's hops, the longest input of
reverse_string and duplicate_string) rising by stages of training steps; a batch depends on (seed, step)
alone, so a resumed run draws the same batches; validation is the task as evaluated; bad stages refused."""

import re

import numpy as np
import pytest

from posbench.core.errors import PosbenchError
from posbench.tasks import build_task
from posbench.tasks.algorithmic import SEPARATOR
from tests.tasks.scoring import TEXT



def test_reverse_string_inputs_grow_by_stage_and_reach_the_longest_that_fits():
    task = build_task("reverse_string", {"curriculum": [3, 8], "stage_steps": 10})
    for step, top in [(0, 3), (9, 3), (10, 8), (19, 8), (20, 32), (500, 32)]:
        x, y, _ = task.training_batch(TEXT, 256, 64, 0, step)
        row = np.concatenate([x.numpy(), y.numpy()[:, -1:]], 1)
        # the input: the non-PAD bytes before the separator
        n = [int(((r[: int(np.flatnonzero(r == SEPARATOR)[0])]) != 0).sum()) for r in row]
        assert max(n) == top and min(n) == 1, (step, max(n))


def test_duplicate_string_stages_cap_the_input_and_validation_is_the_task_as_evaluated():
    staged = build_task("duplicate_string", {"curriculum": [2], "stage_steps": 1000})
    plain = build_task("duplicate_string")
    x, y, _ = staged.training_batch(TEXT, 128, 64, 0, 0)
    assert ((x.numpy() == SEPARATOR).argmax(1) >= 64 - 2 - 4).all()  # inputs of 1..2 bytes: right-aligned
    for i in range(2):  # validation: the plain task's batch i, whatever the curriculum
        for got, want in zip(staged.validation_batch(TEXT, 16, 64, 7, i), plain.training_batch(TEXT, 16, 64, 7, i)):
            assert got.equal(want)


def test_variable_tracking_hops_rise_by_stage():
    task = build_task("variable_tracking", {"hops": 4, "curriculum": [1, 2], "stage_steps": 5})
    for step, hops in [(0, 1), (4, 1), (5, 2), (9, 2), (10, 4), (99, 4)]:
        x, _, _ = task.training_batch(TEXT, 4, 128, 3, step)
        for row in x.numpy():
            s = bytes(row.astype(np.uint8))
            assert len(re.findall(rb"\|[A-Z]{2}=[A-Z]{2}", s)) == 2 * hops  # two chains of `hops` hops


def test_mqar_pairs_rise_by_stage():
    task = build_task("mqar", {"pairs": 16, "alphabet": 16, "eval_pairs": [16], "curriculum": [4, 8], "stage_steps": 3})
    for step, top in [(0, 4), (3, 8), (6, 16)]:
        _, _, answer = task.training_batch(TEXT, 256, 64, 0, step)
        assert answer.sum(1).max() == top


@pytest.mark.parametrize("name, params", [
    ("mqar", {"pairs": 16, "alphabet": 16, "eval_pairs": [4], "curriculum": [4, 8], "stage_steps": 7}),
    ("variable_tracking", {"hops": 4, "curriculum": [1, 2], "stage_steps": 7}),
    ("reverse_string", {"curriculum": [4, 16], "stage_steps": 7}),
])
def test_a_stage_s_batches_are_the_same_in_a_resumed_run(name, params):
    """A fresh task (a resumed process) draws the batch of every step exactly as the first run did; another
    seed draws others."""
    first, resumed = build_task(name, params), build_task(name, params)
    L = 128
    for step in (0, 6, 7, 13, 14, 40):
        a, b = first.training_batch(TEXT, 8, L, 1, step), resumed.training_batch(TEXT, 8, L, 1, step)
        assert all(u.equal(v) for u, v in zip(a, b))
    assert not first.training_batch(TEXT, 8, L, 2, 7)[0].equal(first.training_batch(TEXT, 8, L, 1, 7)[0])


@pytest.mark.parametrize("name, params, message", [
    ("mqar", {"pairs": 8, "curriculum": [4, 16]}, "task.curriculum must rise to task.pairs (8), got [4, 16]"),
    ("mqar", {"pairs": 16, "alphabet": 8}, "task pairs must be in 1..8 (distinct keys of task.alphabet 8), got 16"),
    ("mqar", {"pairs": 8, "alphabet": 16, "curriculum": [4, 24]}, "task pairs must be in 1..16"),
    ("variable_tracking", {"hops": 4, "curriculum": [2, 2]}, "task.curriculum must rise, each stage above the one before, got [2, 2]"),
    ("variable_tracking", {"hops": 2, "curriculum": [3]}, "task.curriculum must rise to task.hops (2), got [3]"),
    ("reverse_string", {"curriculum": [8, 4]}, "task.curriculum must rise, each stage above the one before, got [8, 4]"),
    ("reverse_string", {"curriculum": [0]}, "task.curriculum of 'reverse_string' must be positive"),
    ("reverse_string", {"stage_steps": 0}, "task.stage_steps of 'reverse_string' must be positive"),
])
def test_bad_stages_are_refused_in_one_line(name, params, message):
    with pytest.raises(PosbenchError, match=re.escape(message)):
        build_task(name, params)


@pytest.mark.parametrize("name, stage, top", [("reverse_string", 32, 32), ("duplicate_string", 40, 21)])
def test_a_stage_longer_than_train_len_allows_is_refused(name, stage, top):
    task = build_task(name, {"curriculum": [stage]})
    with pytest.raises(PosbenchError, match=re.escape(f"below the longest that fits train_len=64 ({top})")):
        task.check_window(64)
    build_task(name, {"curriculum": [top - 1]}).check_window(64)


def test_no_curriculum_leaves_run_ids_and_batches_unchanged():
    from posbench.store.identity import task_settings

    for name in ("mqar", "variable_tracking", "reverse_string", "duplicate_string"):
        assert task_settings({"name": name, "curriculum": [], "stage_steps": 1000}) == {"name": name}
        assert "curriculum" in task_settings({"name": name, "curriculum": [2], "stage_steps": 1000})
    task = build_task("reverse_string")
    assert task.at_step(10 ** 6) is task  # no stage: the task itself draws every batch
