"""Copy / duplicate string (Ruoss et al. 2023, "Randomized Positional Encodings", task
``duplicate_string``; Kazemnejad et al. 2023's copy task): read a random string, a separator, and
write the string again; every copied byte is a scored prediction::

    0 0 ... 0 s1 s2 ... sm | s1 s2 ... sm

Letters a-z, m drawn uniformly from 1..L/2 in training (shorter strings are left-padded with 0, so
no training example is longer than the training window) and m = L/2 in evaluation (the longest
string a window of L holds), so accuracy beyond training length is the ability to copy strings
longer than any seen. Deviation: Ruoss et al. feed the string once and decode the copy from
separate output positions; a decoder-only model reads both halves in one sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posbench.tasks import register
from posbench.tasks.base import PAD, Task

SEPARATOR = ord("|")
LETTERS = np.arange(ord("a"), ord("z") + 1, dtype=np.uint8)


@register("copy")
class Copy(Task):
    metric = "token_accuracy"  # Ruoss et al.'s accuracy: the fraction of copied bytes right

    @dataclass
    class Params(Task.Params):
        pass

    def train_condition(self, rng, length):
        return int(rng.integers(1, length // 2 + 1))

    def chance(self, m) -> float:
        return 1 / len(LETTERS)  # a letter at random

    def min_length(self) -> int:
        return 2

    def example(self, rng, length, m, text):
        m = length // 2 if m is None else m
        s = rng.choice(LETTERS, size=m)
        pad = np.full(length + 1 - (2 * m + 1), PAD, dtype=np.uint8)
        tokens = np.concatenate([pad, s, [SEPARATOR], s]).astype(np.uint8)
        answer = np.zeros(length, dtype=bool)
        answer[length - m :] = True
        return tokens, answer
