"""Flip-flop language modelling (Liu et al. 2023, "Exposing Attention Glitches with Flip-Flop Language
Modeling", arXiv 2306.00946): a sequence of instructions, each a letter and a bit: ``w b`` writes b,
``i b`` is ignored, ``r b`` reads, and the bit after every ``r`` is the last bit written::

    w1 i0 i1 r1 w0 i1 r0 ... r?          (scored: the bit after each r)

FFL(p_i): the first instruction writes and the last reads; the others ignore with probability p_i and
write or read with (1 - p_i) / 2 each, the bits uniform. The paper trains on FFL(0.8) and tests on it,
on the sparse FFL(0.98) (long stretches between a write and its read) and on the dense FFL(0.1); here
``train_ignore`` and the evaluation grid ``eval_ignore`` (the condition ``ignore``). Its sequences have
a fixed length (T = 512); here the instructions fill the window (one PAD first where L + 1 is odd), so
a longer evaluation window is a longer sequence of the same language: the length-generalisation axis.

Scored: every read's bit (the only deterministic predictions), ``token_accuracy`` (the paper reports
its complement, the error rate on reads; ``exact``: every read of a sequence right). Chance 1/2 (a
constant bit). The paper trains the language model on every token (the random bits and instructions
too): ``loss: mixed`` (the default) adds that loss to the reads'. A regular language (a two-state
automaton), grouped with the regular tasks in the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np

from posbench.core.params import Rule, param
from posbench.tasks import register
from posbench.tasks.base import PAD, Task

# an ignore probability: 0 (no ignore instructions) up to, not including, 1 (a sequence that never reads)
PROBABILITY = Rule("in [0, 1)", lambda p: 0 <= p < 1)

WRITE, IGNORE, READ = (ord(c) for c in "wir")
BITS = np.array([ord("0"), ord("1")], dtype=np.uint8)


@register("flip_flop")
class FlipFlop(Task):
    condition = "ignore"
    metric = "token_accuracy"
    level = "regular"

    @dataclass
    class Params(Task.Params):
        train_ignore: float = param(0.8, PROBABILITY)  # p_i of the training sequences (the paper's FFL(0.8))
        eval_ignore: List[float] = param(rule=PROBABILITY, default_factory=lambda: [0.8, 0.98, 0.1])  # in-distribution, sparse, dense
        loss: str = "mixed"  # the paper's language-model loss on every token, plus the reads'


    def conditions(self) -> list:
        return list(self.params.eval_ignore)

    def train_condition(self, rng, length):
        return self.params.train_ignore

    def chance(self, condition) -> float:
        return 0.5

    def min_length(self) -> int:
        return 4  # a write and a read

    def example(self, rng, length, p_ignore, text):
        n = (length + 1) // 2  # instructions
        other = (1 - p_ignore) / 2
        ops = rng.choice(np.array([WRITE, IGNORE, READ], dtype=np.uint8), size=n, p=[other, p_ignore, other])
        ops[0], ops[-1] = WRITE, READ
        bits = rng.integers(0, 2, size=n)
        writes = np.where(ops == WRITE, np.arange(n), 0)
        last_write = np.maximum.accumulate(writes)  # index of the last write at or before each instruction
        reads = ops == READ
        bits[reads] = bits[last_write[reads]]
        seq = np.stack([ops, BITS[bits]], 1).ravel()
        tokens = np.concatenate([np.full(length + 1 - 2 * n, PAD, dtype=np.uint8), seq])
        answer = np.zeros(length, dtype=bool)
        offset = length + 1 - 2 * n  # token index of the first instruction
        answer[offset + 2 * np.flatnonzero(reads)] = True  # the prediction at a read's letter is its bit
        return tokens, answer
