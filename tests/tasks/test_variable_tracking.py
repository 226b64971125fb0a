"""posbench/tasks/variable_tracking.py: chains of assignments in corpus text; the answer is the value reached
by following the queried variable's hops; a perfect model scores 1, a constant one nothing, and one that
picks a value of the window without following a chain 1/chains."""

import re

import numpy as np
import pytest

from posbench.core.errors import PosbenchError
from posbench.tasks import build_task
from posbench.tasks.variable_tracking import no_tracking_accuracy
from tests.tasks.scoring import TEXT, constant, perfect, scores


def follow(s: bytes, name: bytes) -> bytes:
    """The value of ``name`` by following the assignments of ``s`` (a hand-written resolver)."""
    table = dict(re.findall(rb"\|([A-Z]+)=([A-Z]+|[0-9]+)", s))
    while not table[name].isdigit():
        name = table[name]
    return table[name]


def test_the_answer_is_the_value_reached_by_following_the_hops():
    task = build_task("variable_tracking", {"chains": 3, "hops": 3})
    for seed in range(20):
        L = 128 + seed
        tokens, answer = task.example(np.random.default_rng(seed), L, None, TEXT)
        s = bytes(tokens)
        body, asked = s.rsplit(b"|?", 1)
        name, value = asked.split(b"=")
        assert len(tokens) == L + 1 and follow(body, name) == value and len(value) == 3 and answer.sum() == 3
        assert len(re.findall(rb"\|[A-Z]{2}=[A-Z]{2}", body)) == 9 and len(re.findall(rb"\|[A-Z]{2}=[0-9]{3}", body)) == 3
    assert task.chance(None) == pytest.approx(1 / 3)


def test_a_made_up_instance():
    """|AB=417 |CD=AB |EF=CD: the value of EF is 417 (two hops)."""
    assert follow(b"xx|AB=417 y|QK=905|CD=AB z|EF=CD|XY=QK", b"EF") == b"417"


def test_a_perfect_model_scores_one_and_the_baselines_their_chance():
    task = build_task("variable_tracking")
    assert scores(task, 128, perfect) == (1.0, 1.0)
    assert scores(task, 128, constant("5"))[0] < 0.02  # a constant value: about 10^-3
    assert no_tracking_accuracy(task, 128, 2000, TEXT) == pytest.approx(task.chance(None), abs=0.04)


def test_one_chain_is_refused():
    with pytest.raises(PosbenchError, match="task.chains must be at least 2"):
        build_task("variable_tracking", {"chains": 1})
