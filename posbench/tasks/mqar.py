"""Multi-query associative recall, MQAR (Arora et al. 2023, "Zoology"; their generator:
HazyResearch/zoology, ``zoology/data/associative_recall.py``).

n key-value pairs open the window, the gap is filled with 0 and n queries close it: each query is
a key (all n keys, in a random order) followed by its value, and the values of the queries are the
scored predictions::

    k1 v1 k2 v2 ... kn vn 0 0 0 ... 0 q1 v(q1) q2 v(q2) ... qn v(qn)

Keys are bytes 128..191 and values bytes 192..255 (disjoint, as Zoology's key and value
vocabularies), keys distinct within an example, values drawn with replacement. Deviation from
Zoology: its queries sit at random places of the gap (``power_a`` spacing); here they close the
window, so that a longer window moves the pairs farther from the queries, the distance an
extrapolating model has to bridge. Training draws n uniformly from 1..``pairs``; evaluation runs a
length x n grid (``eval_pairs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import numpy as np

from posbench.errors import PosbenchError
from posbench.tasks import register
from posbench.tasks.base import PAD, Task

KEYS = np.arange(128, 192, dtype=np.uint8)
VALUES = np.arange(192, 256, dtype=np.uint8)


@register("mqar")
class MQAR(Task):
    condition = "pairs"
    metric = "token_accuracy"  # Zoology's accuracy: the fraction of queries answered right

    @dataclass
    class Params(Task.Params):
        pairs: int = 8  # training examples hold 1..pairs key-value pairs
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
        # answering with one of the n values in the window, at random: the queried value, plus any
        # other value that equals it by chance (values are drawn with replacement)
        return (1 + (n - 1) / len(VALUES)) / n

    def min_length(self) -> int:
        return 4 * max(self.params.pairs, *self.params.eval_pairs)

    def example(self, rng, length, n, text):
        keys = rng.choice(KEYS, size=n, replace=False)
        values = rng.choice(VALUES, size=n)
        order = rng.permutation(n)
        pairs = np.stack([keys, values], 1).ravel()
        queries = np.stack([keys[order], values[order]], 1).ravel()
        gap = np.full(length + 1 - 4 * n, PAD, dtype=np.uint8)
        tokens = np.concatenate([pairs, gap, queries])
        answer = np.zeros(length, dtype=bool)
        # query i's value is token length + 1 - 2n + 2i + 1, predicted at the position before it
        answer[length + 1 - 2 * n :: 2] = True
        return tokens, answer
