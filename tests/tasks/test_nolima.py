"""posbench/tasks/nolima.py: the needle and its question share no byte but the separators; the question's
city is the asked needle's landmark through the fixed world table; the literal control names the landmark."""

import re

import numpy as np
import pytest

from posbench.core.errors import PosbenchError
from posbench.tasks import build_task
from posbench.tasks.nolima import SEPARATORS, needle, world
from tests.tasks.scoring import TEXT, perfect, scores

NEEDLES = {"name_first": re.compile(rb"\|([a-z]{3}) lives by ([a-z]+|[\x80-\xbf])\."),
           "name_last": re.compile(rb"\|by ([a-z]+|[\x80-\xbf])([a-z]{3})\.")}
ENDS = {"name_first": b"?", "name_last": b""}


def parse(s: bytes, word_len: int, order: str = "name_first"):
    """(the needles as (name, landmark), the question, the city, the answer) of a window."""
    body, asked = s.rsplit(b"|WHO SAW ", 1)
    needles = NEEDLES[order].findall(body)
    if order == "name_last":
        needles = [(n, lm) for lm, n in needles]
    city, name = asked[:word_len], asked[word_len + len(ENDS[order]):]
    return needles, b"|WHO SAW " + city + ENDS[order], city, name


@pytest.mark.parametrize("params", [{}, {"needles": 4, "pairs": 12, "word_len": 3},
                                    {"order": "name_last", "word_len": 1}, {"order": "name_last", "needles": 3},
                                    {"order": "name_last", "word_len": 1, "symbols": "bytes"}])
def test_needle_and_question_share_no_token_but_the_separators(params):
    task = build_task("nolima", params)
    p = task.params
    city_of = dict(world(p.pairs, p.word_len, p.symbols))
    rng = np.random.default_rng(0)
    for i in range(300):
        tokens, answer = task.example(rng, task.min_length() + i % 50, None, TEXT)
        needles, question, city, name = parse(bytes(tokens), p.word_len, p.order)
        assert len(needles) == p.needles and bytes(tokens[1:][answer]) == name
        (asked,) = [(n, lm) for n, lm in needles if city_of[lm] == city]  # the association finds one needle
        assert asked[0] == name
        text = needle(asked[0], asked[1], p.order)
        assert text in bytes(tokens) and not (set(text) & set(question)) - SEPARATORS, (text, question)


def test_the_world_is_fixed_and_no_city_is_its_landmark_in_capitals():
    table = world(8, 2)
    assert table == world(8, 2) and len({lm for lm, _ in table}) == len({c for _, c in table}) == 8
    assert all(c != lm.upper() and c.isupper() and lm.islower() for lm, c in table)


def test_the_literal_control_names_the_landmark():
    task = build_task("nolima", {"literal": True})
    tokens, _ = task.example(np.random.default_rng(1), 96, None, TEXT)
    needles, _, landmark, name = parse(bytes(tokens), 2)
    assert (name, landmark) in needles


def test_a_perfect_model_scores_one_and_chance_is_one_in_needles():
    task = build_task("nolima", {"needles": 4})
    assert scores(task, 96, perfect) == (1.0, 1.0) and task.chance(None) == 0.25


@pytest.mark.parametrize("params, message", [
    ({"needles": 9}, "task.needles must be in 1..8"),
    ({"pairs": 3, "needles": 4}, "task.needles must be in 1..3"),
    ({"word_len": 1, "pairs": 20}, "task.word_len=1 is too short for 20 distinct pairs"),
    ({"order": "last"}, "task.order must be one of name_first, name_last, got 'last'"),
    ({"symbols": "bytes"}, "task.symbols=bytes takes one byte per landmark and city (word_len 1)"),
])
def test_bad_settings_are_refused(params, message):
    with pytest.raises(PosbenchError, match=re.escape(message)):
        build_task("nolima", params)
