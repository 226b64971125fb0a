"""posbench/tasks/babi.py: bAbI tasks 1-3 in corpus text; a solver that reads only the statements derives
every answer; the baseline is a story's place guessed; bad settings refused."""

import re

import numpy as np
import pytest

from posbench.core.errors import PosbenchError
from posbench.tasks import build_task
from posbench.tasks.babi import PLACES, place_guess_accuracy, story
from tests.tasks.scoring import TEXT, perfect, scores

FACT = re.compile(rb"\|([A-Z][a-z]{2}) (went to|got) ([a-z]{4})\.")


def solve(window: bytes) -> bytes:
    """The answer from the window's statements and question alone (a hand-written bAbI reader)."""
    body, asked = window.rsplit(b"|Where ", 1)
    at, holder, path = {}, {}, {}
    for who, verb, what in FACT.findall(body):
        if verb == b"went to":
            at[who] = what
            path.setdefault(who, []).append(what)
        else:
            holder[what] = who
    if m := re.fullmatch(rb"is ([A-Z][a-z]{2})\?", asked):  # qa 1
        return at[m[1]]
    if m := re.fullmatch(rb"is ([a-z]{4})\?", asked):  # qa 2: where its holder is
        return at[holder[m[1]]]
    m = re.fullmatch(rb"was ([a-z]{4}) before ([a-z]{4})\?", asked)  # qa 3: the holder's place before the last
    places = path[holder[m[1]]]
    assert places[-1] == m[2] and places.count(m[2]) == 1
    return places[-2]


@pytest.mark.parametrize("qa", [1, 2, 3])
def test_every_answer_follows_from_the_statements(qa):
    task = build_task("babi", {"qa": [1, 2, 3], "people": 3, "moves": 5})
    rng = np.random.default_rng(qa)
    for i in range(200):
        L = task.min_length() + i % 60
        tokens, answer = task.example(rng, L, qa, TEXT)
        s = bytes(tokens)
        assert len(tokens) == L + 1 and bytes(tokens[1:][answer]) in PLACES
        assert solve(s[: -4]) == s[-4:], s


def test_qa2_and_qa3_need_the_pick_up_and_qa3_a_place_left():
    rng = np.random.default_rng(0)
    for _ in range(200):
        s = story(rng, 3, 2, 3)
        assert sum(b" got " in st for st in s.statements) == 1 and s.answer != s.question[-5:-1]
        s1 = story(rng, 1, 2, 3)
        assert not any(b" got " in st for st in s1.statements)


def test_a_perfect_model_scores_one_and_a_constant_place_a_sixth():
    import torch

    task = build_task("babi", {"qa": [1], "people": 2, "moves": 3})
    assert scores(task, 128, perfect, condition=1) == (1.0, 1.0)

    def hall(b):  # always answers hall: right where the story ends there, 1/6 of the stories
        out = b.y.clone()
        out[:, -4:] = torch.tensor(list(b"hall"))
        return out

    assert scores(task, 128, hall, condition=1, examples=4000)[0] == pytest.approx(1 / len(PLACES), abs=0.025)


def test_the_story_guess_baseline_is_below_one_and_above_a_random_place():
    for qa in (1, 2, 3):
        assert 1 / len(PLACES) < place_guess_accuracy(qa, 2, 3) < 1


@pytest.mark.parametrize("params, message", [
    ({"qa": [4]}, "task.qa must list bAbI tasks among 1, 2, 3, got [4]"),
    ({"qa": []}, "task.qa must list bAbI tasks among 1, 2, 3, got []"),
    ({"people": 7}, "task.people must be in 1..6 (the names), got 7"),
    ({"qa": [3], "moves": 1}, "task.moves must be at least 2 for qa 3"),
])
def test_bad_settings_are_refused(params, message):
    with pytest.raises(PosbenchError, match=re.escape(message)):
        build_task("babi", params)
