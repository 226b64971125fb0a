"""Multi-query associative recall, MQAR (Arora et al. 2023, "Zoology"; their generator:
HazyResearch/zoology, ``zoology/data/associative_recall.py``, ``multiquery_ar``).

n key-value pairs open the window, the gap is filled with random non-query tokens and n queries
close it: each query is a key (all n keys, in a random order) followed by a random non-query
token; the value of each query is its *target*, a label only, never in the input::

    input    k1 v1 k2 v2 ... kn vn  r r r ... r  q1 r q2 r ... qn r
    target                                       v(q1) v(q2) ... v(qn)   (at the queries' positions)

As in Zoology: keys are bytes 128..191 and values bytes 192..255 (disjoint, Zoology's key and value
halves of its vocabulary), keys distinct within an example, values drawn *without* replacement,
the answer only as a label, and random tokens where Zoology's ``random_non_queries`` puts them.
A model that does not bind keys to values therefore cannot beat 1/n per query: it knows the n
values of the window, and nothing tells it which belongs to which key, nor which it has "used"
(``no_binding_accuracy`` simulates such a model; ``chance`` is its exact value). An earlier
generator put each answer into the input and drew values with replacement, so that a model
answering "a value of the window not yet used" scored 75 / 53 / 35% at 2 / 4 / 8 pairs.

Deviations from Zoology: its queries sit at random places of the gap (``power_a`` spacing); here
they close the window, so that a longer window moves the pairs farther from the queries, the
distance an extrapolating model has to bridge. Its random filler is drawn from the whole
vocabulary; here from bytes 1..127, neither keys nor values (a filler key would be a second
occurrence of a key with no value: noise Zoology accepts, and not what is measured here).
Training draws n uniformly from 1..``pairs``; evaluation runs a length x n grid (``eval_pairs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.tasks import register
from posbench.tasks.base import Task

KEYS = np.arange(128, 192, dtype=np.uint8)
VALUES = np.arange(192, 256, dtype=np.uint8)
FILLER = np.arange(1, 128, dtype=np.uint8)  # random non-query tokens: neither keys nor values


@register("mqar")
class MQAR(Task):
    condition = "pairs"
    metric = "token_accuracy"  # Zoology's accuracy: the fraction of queries answered right

    @dataclass
    class Params(Task.Params):
        pairs: int = param(8, positive)  # training examples hold 1..pairs key-value pairs
        eval_pairs: List[int] = field(default_factory=lambda: [2, 4, 8])

        def check(self) -> None:
            super().check()
            if bad := [n for n in [self.pairs, *self.eval_pairs] if not 1 <= n <= len(KEYS)]:
                raise PosbenchError(f"task pairs must be in 1..{len(KEYS)} (distinct keys), got {bad[0]}")

    def conditions(self) -> list:
        return list(self.params.eval_pairs)

    def train_condition(self, rng, length):
        return int(rng.integers(1, self.params.pairs + 1))

    def chance(self, n) -> float:
        """The best accuracy without binding keys to values: 1/n (n distinct values, no answer in
        the input; ``no_binding_accuracy`` checks it by simulation)."""
        return 1 / n

    def min_length(self) -> int:
        return 4 * max(self.params.pairs, *self.params.eval_pairs)

    def example(self, rng, length, n, text):
        keys = rng.choice(KEYS, size=n, replace=False)
        values = rng.choice(VALUES, size=n, replace=False)
        order = rng.permutation(n)
        pairs = np.stack([keys, values], 1).ravel()
        tokens = np.concatenate([pairs, rng.choice(FILLER, size=length + 1 - 2 * n)])
        first = length + 1 - 2 * n  # query i sits at first + 2i, a random token after it
        tokens[first::2] = keys[order]
        targets = tokens[1:].copy()
        targets[first::2] = values[order]  # the answer: a label at the query's position only
        answer = np.zeros(length, dtype=bool)
        answer[first::2] = True
        return tokens, answer, targets


def no_binding_accuracy(task: MQAR, length: int, n: int, examples: int, seed: int = 0) -> float:
    """Simulated accuracy of a model that reads the values of the window but not which key each
    belongs to: at each query it answers a value of the window it has not answered yet, at random
    (the strategy that scored 54% on the old generator). Matches ``chance`` (1/n)."""
    rng = np.random.default_rng(seed)
    right = total = 0
    for _ in range(examples):
        tokens, answer, targets = task.example(rng, length, n, None)
        window_values = list(tokens[1 : 2 * n : 2])
        guesses = rng.permutation(window_values)  # one unused value per query
        right += int((targets[answer] == guesses).sum())
        total += int(answer.sum())
    return right / total
