"""Common-word extraction (RULER, Hsieh et al. 2024, arXiv 2404.06654, aggregation; reference:
NVIDIA/RULER ``scripts/data/synthetic/common_words_extraction.py``, ``get_example``).

A list of words in which ``common`` words appear ``common_repeats`` times each and the others
``uncommon_repeats`` times each, shuffled; after the separator the answer names the common words::

    kqv ata kqv zpe ata lor kqv ... ata|kqv ata
                                       ^^^^^^^ scored: the common words, in order of first appearance

As in RULER the common words keep their count at every length and the longer window holds more
uncommon words (RULER: 10 common words 30 times each, the rest 3 times, at 4K tokens and more; 6 and
1 below), so the common words grow sparser with length and only a model that counts over the whole
window finds them. Words are ``word_len`` random lowercase letters (bytes of the corpus's alphabet;
RULER draws English words), distinct within an example, each followed by a space. The answer's order
is fixed (first appearance in the list) so that teacher forcing scores one string; RULER scores the
fraction of the common words present in a free answer (``string_match_all``); here ``exact`` (every
common word named). Chance: a model that names ``common`` of the D distinct words of the list at
random, 1 / C(D, common), which falls with length (``chance_at``; ``guess_accuracy`` simulates it).
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.tasks import register
from posbench.tasks.base import PAD, Task

LETTERS = np.frombuffer(string.ascii_lowercase.encode(), np.uint8)
SPACE, SEPARATOR = ord(" "), ord("|")


@register("common_words")
class CommonWords(Task):

    @dataclass
    class Params(Task.Params):
        common: int = param(2, positive)  # words to name (RULER: 10)
        common_repeats: int = param(4, positive)  # occurrences of each common word (RULER: 30; 6 below 4K)
        uncommon_repeats: int = param(1, positive)  # occurrences of every other word (RULER: 3; 1 below 4K)
        word_len: int = param(3, positive)  # letters per word

        def check(self) -> None:
            super().check()
            if self.common_repeats <= self.uncommon_repeats:
                raise PosbenchError(f"task.common_repeats ({self.common_repeats}) must exceed task.uncommon_repeats "
                                    f"({self.uncommon_repeats}): the common words are the more frequent ones")

    def _answer_len(self) -> int:
        p = self.params
        return p.common * p.word_len + p.common - 1

    def uncommon(self, length: int) -> int:
        """How many uncommon words a window of ``length`` holds."""
        p = self.params
        room = length + 1 - 1 - self._answer_len() - (p.word_len + 1) * p.common * p.common_repeats
        return max(0, room // ((p.word_len + 1) * p.uncommon_repeats))

    def min_length(self) -> int:
        p = self.params
        return (p.word_len + 1) * (p.common * p.common_repeats + p.uncommon_repeats) + self._answer_len()

    def chance(self, condition) -> float:
        return float("nan")  # depends on the length: chance_at

    def chance_at(self, condition, length: int | None) -> float:
        """1 / C(D, common), D the distinct words of a window of ``length``."""
        if length is None:
            return float("nan")
        return 1 / math.comb(self.params.common + self.uncommon(length), self.params.common)

    def example(self, rng, length, condition, text):
        p = self.params
        u = self.uncommon(length)
        words: list[bytes] = []
        while len(words) < p.common + u:
            w = bytes(rng.choice(LETTERS, size=p.word_len))
            if w not in words:
                words.append(w)
        listed = rng.permutation(np.array(words[:p.common] * p.common_repeats + words[p.common:] * p.uncommon_repeats,
                                          dtype=object))
        firsts = {w: i for i, w in reversed(list(enumerate(listed)))}
        common = sorted(words[:p.common], key=firsts.__getitem__)
        body = b"".join(w + bytes([SPACE]) for w in listed)[:-1] + bytes([SEPARATOR]) + b" ".join(common)
        pad = np.full(length + 1 - len(body), PAD, dtype=np.uint8)
        tokens = np.concatenate([pad, np.frombuffer(body, np.uint8)])
        answer = np.zeros(length, dtype=bool)
        answer[-self._answer_len():] = True
        return tokens, answer


def guess_accuracy(task: CommonWords, length: int, examples: int, seed: int = 0) -> float:
    """Simulated exact match of a model that names ``common`` distinct words of the list at random (in
    their order of first appearance): what counting nothing scores. Matches ``chance_at``."""
    rng = np.random.default_rng(seed)
    right, c = 0, task.params.common
    for _ in range(examples):
        tokens, _ = task.example(rng, length, None, None)
        listed = bytes(tokens[:-task._answer_len()]).strip(b"\0").rstrip(b"|").split()
        distinct = sorted(set(listed))
        pick = {distinct[i] for i in rng.choice(len(distinct), size=c, replace=False)}
        right += int(pick == set(bytes(tokens[-task._answer_len():]).split()))
    return right / examples
