"""bAbI-style reasoning over facts hidden in text (Weston et al. 2015, "Towards AI-Complete Question
Answering: A Set of Prerequisite Toy Tasks", arXiv 1502.05698, tasks 1-3; the facts in filler text as
BABILong does, Kuratov et al. 2024, arXiv 2406.10149, reference booydar/babilong: bAbI's sentences
inserted between the sentences of PG19 books, the question at the end).

A story of people moving between places (and one of them picking up an object) is written as short
statements at sorted random places of real text (the corpus's, as passkey's filler), then a question;
the answer is a place (four letters), scored exact match::

    <text> |Ann went to hall. <text> |Bob went to yard. <text> |Ann went to park. ... |Where is Ann?park
                                                                                             ^^^^ scored

``qa`` (the evaluation grid's condition, drawn uniformly per training example):

* 1, single supporting fact: ``|Where is Ann?``: the place of the asked person's last move.
* 2, two supporting facts: ``|Ann got milk.`` somewhere in the story; ``|Where is milk?``: the place of
  the holder's last move (the pick-up and that move; the pick-up may come before or after it).
* 3, three supporting facts: ``|Where was milk before shed?``: the holder picked the object up after a
  first move and then moved to ``shed`` (a place it had not been before); the answer is where it was
  right before, the place of the move before the last (that move, the pick-up and the last move).

A story has ``moves`` moves of ``people`` people (each to a place other than the mover's current one).
Baseline (``chance``): a model that knows the answer is a place of the story but not which, naming one
of the story's distinct places at random: the mean of 1 / (distinct places) over stories, by simulation
with a fixed seed (``place_guess_accuracy``).

Deviations, for a byte-level model trained at about a hundred tokens: bAbI's sentences (``Mary moved to
the bathroom.``, ``Where is the football?``, ``Where was the football before the kitchen?``) become short
fixed forms with three-letter names, four-letter places and objects, one verb per kind of fact and a
``|`` marking each statement (bAbI's varied verbs, ``dropped`` / ``discarded`` and distractor objects are
left out: one object per story); BABILong inserts whole sentences between the book's sentences, here
statements go at byte positions of the text. Generated here, not drawn from the bAbI files (offline,
and at any length).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import List

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.tasks import register
from posbench.tasks.base import Task, scatter_in_filler

PEOPLE = (b"Ann", b"Bob", b"Cal", b"Dan", b"Eve", b"Fay")
PLACES = (b"hall", b"bath", b"yard", b"park", b"loft", b"shed")
OBJECTS = (b"milk", b"ball", b"book", b"coin")
QA = (1, 2, 3)


def move(person: bytes, place: bytes) -> bytes:
    return b"|" + person + b" went to " + place + b"."


def pick(person: bytes, thing: bytes) -> bytes:
    return b"|" + person + b" got " + thing + b"."


def question(qa: int, who: bytes, place: bytes = b"") -> bytes:
    """The question of task ``qa`` about a person (1) or an object (2, 3; 3 names the last place)."""
    return {1: b"|Where is " + who + b"?", 2: b"|Where is " + who + b"?",
            3: b"|Where was " + who + b" before " + place + b"?"}[qa]


@dataclass
class Story:
    statements: list  # bytes, in story order
    question: bytes
    answer: bytes  # a place


def story(rng: np.random.Generator, qa: int, people: int, moves: int) -> Story:
    """One story of task ``qa``: ``moves`` moves of ``people`` people, the pick-up (2, 3), the question."""
    while True:  # redraw the (rare) stories that cannot ask the question
        who = [PEOPLE[i] for i in rng.choice(len(PEOPLE), size=people, replace=False)]
        at: dict = {}
        path: dict = {p: [] for p in who}  # each person's places, in order
        facts, movers = [], []
        for _ in range(moves):
            p = who[int(rng.integers(people))]
            place = PLACES[int(rng.choice([i for i, x in enumerate(PLACES) if x != at.get(p)]))]
            at[p] = place
            path[p].append(place)
            facts.append(move(p, place))
            movers.append(p)
        if qa == 1:
            asked = [p for p in who if path[p]]
            p = asked[int(rng.integers(len(asked)))]
            return Story(facts, question(1, p), at[p])
        thing = OBJECTS[int(rng.integers(len(OBJECTS)))]
        if qa == 2:
            holders = [p for p in who if path[p]]
            holder = holders[int(rng.integers(len(holders)))]
            i = int(rng.integers(len(facts) + 1))  # the pick-up anywhere: the object is where its holder is now
            return Story(facts[:i] + [pick(holder, thing)] + facts[i:], question(2, thing), at[holder])
        holders = [p for p in who if len(path[p]) >= 2 and path[p][-1] not in path[p][:-1]]
        if not holders:
            continue
        holder = holders[int(rng.integers(len(holders)))]
        mine = [j for j, m in enumerate(movers) if m == holder]
        i = int(rng.integers(mine[0] + 1, mine[-1] + 1))  # after its first move, before its last
        return Story(facts[:i] + [pick(holder, thing)] + facts[i:], question(3, thing, path[holder][-1]),
                     path[holder][-2])


@register("babi")
class Babi(Task):
    condition = "qa"

    @dataclass
    class Params(Task.Params):
        qa: List[int] = field(default_factory=lambda: [1])  # bAbI's tasks trained (drawn per example) and scored
        people: int = param(2, positive)  # people in a story
        moves: int = param(2, positive)  # moves in a story
        loss: str = "mixed"  # as passkey: the language-model loss on the text trains the induction lookups need

        def check(self) -> None:
            super().check()
            if not self.qa or any(q not in QA for q in self.qa):
                raise PosbenchError(f"task.qa must list bAbI tasks among {', '.join(map(str, QA))}, got {list(self.qa)}")
            if self.people > len(PEOPLE):
                raise PosbenchError(f"task.people must be in 1..{len(PEOPLE)} (the names), got {self.people}")
            if 3 in self.qa and self.moves < 2:
                raise PosbenchError(f"task.moves must be at least 2 for qa 3 (a move before the pick-up and one after), "
                                    f"got {self.moves}")

    def conditions(self) -> list:
        return list(self.params.qa)

    def train_condition(self, rng, length):
        return self.params.qa[int(rng.integers(len(self.params.qa)))]

    def chance(self, qa) -> float:
        return place_guess_accuracy(int(qa), self.params.people, self.params.moves)

    def min_length(self) -> int:
        longest_fact = max(len(move(PEOPLE[0], PLACES[0])), len(pick(PEOPLE[0], OBJECTS[0])))
        longest_question = max(len(question(q, OBJECTS[0], PLACES[0])) for q in self.params.qa)
        picks = 1 if set(self.params.qa) - {1} else 0
        return (self.params.moves + picks) * longest_fact + longest_question + len(PLACES[0]) - 1

    def example(self, rng, length, qa, text):
        s = story(rng, int(qa), self.params.people, self.params.moves)
        tail = s.question + s.answer
        tokens = scatter_in_filler(rng, text, list(s.statements), tail, length)
        answer = np.zeros(length, dtype=bool)
        answer[-len(s.answer):] = True
        return tokens, answer


@functools.cache
def place_guess_accuracy(qa: int, people: int, moves: int, stories: int = 2000) -> float:
    """The expected exact match of naming one of a story's distinct places at random: mean 1 / distinct."""
    rng = np.random.default_rng(0)
    total = 0.0
    for _ in range(stories):
        s = story(rng, qa, people, moves)
        places = {p for p in PLACES if any(st.endswith(b" " + p + b".") for st in s.statements)}
        total += 1 / len(places)
    return total / stories
