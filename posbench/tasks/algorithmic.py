"""The algorithmic length-generalisation tasks in decoder layout (Deletang et al. 2023, "Neural Networks
and the Chomsky Hierarchy", arXiv 2207.02098; Ruoss et al. 2023, "Randomized Positional Encodings",
arXiv 2305.16843; reference: google-deepmind/neural_networks_chomsky_hierarchy ``tasks/`` and
google-deepmind/randomized_positional_encodings ``tasks/``, ``experiments/range_evaluation.py``).

The references feed an input string of length n to an encoder and read the output from extra
positions. A decoder reads both in one sequence: the input, a separator, the target, with the loss
on the target only (``loss: answer``, posbench/tasks/loss.py; the scored positions are the ones that
predict a target token, as copy's are). One example fills one window of L tokens, right-aligned,
with PAD before it::

    0 0 ... 0  x1 x2 ... xn  |  y1 y2 ... ym        (m = the task's output length for n)

``max_input(L)``: the longest input whose example fits a window of L tokens (L + 1 tokens with the
last target). Training draws n uniformly from 1..max_input(train_len), the references' uniform
curriculum over 1..N (N = max_input(train_len) here, 40 there). Evaluation at window length L draws
n uniformly from the band max_input(L // 2) + 1 .. max_input(L): with the default multiples 1, 2, 4,
8, 16 the bands above 1x tile every input length N + 1 .. 16N once, as the references score every
length up to their test maximum (1x scores the upper half of the training lengths).

Scoring as the references do: ``token_accuracy``, the fraction of target tokens whose argmax is
right (their ``accuracy_fn``: the masked mean over output tokens), and ``exact`` (every target token
right). Ruoss et al.'s headline is that accuracy averaged uniformly over the test lengths beyond
training (posbench/report/tasks/algorithmic.py weights each band by the lengths it holds).

Curriculum (posbench/tasks/curriculum.py): ``curriculum: [4, 8]`` draws training inputs of 1..4 tokens for
``stage_steps`` steps, then 1..8, then 1..N; every stage below N (refused at the spec's check otherwise:
``check_window``). Validation and evaluation are the task without stages.

Deviation: the references encode tokens one-hot over the task's own alphabet; here they are bytes
('0', '1', ...) of the byte vocabulary every encoding runs on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.tasks.base import PAD
from posbench.tasks.curriculum import StagedParams, StagedTask

SEPARATOR = ord("|")
LEVELS = ("regular", "context-free", "context-sensitive")  # Deletang et al.'s Table 1 (dcf: context-free here)


def digits(values) -> np.ndarray:
    """Symbols 0, 1, ... as the bytes '0', '1', ..."""
    return (np.asarray(values, dtype=np.int64) + ord("0")).astype(np.uint8)


class AlgorithmicTask(StagedTask):
    """An input -> output transduction laid out as input, separator, target. Subclasses set ``level``,
    ``output_length(n)`` (at most, for the fit) and ``transduce``."""

    metric = "token_accuracy"  # the references' per-token accuracy
    level = "regular"
    min_input = 1
    symbols = 2  # the size of the output alphabet a constant model guesses among (chance = 1 / symbols)

    @dataclass
    class Params(StagedParams):
        pass  # curriculum (StagedParams): the longest training input of each stage, rising; stage_steps per stage

    longest: int | None = None  # a curriculum stage's copy: the longest training input (None: max_input(train_len))

    def at_value(self, longest: int) -> "AlgorithmicTask":
        staged = type(self)(self.params)
        staged.longest = longest
        return staged

    def check_window(self, train_len: int) -> None:
        """A curriculum's stages are input lengths below the longest that fits ``train_len`` (the task's own
        value, which the stages rise to) and at least the shortest input."""
        top = self.max_input(train_len)
        if bad := [n for n in self.params.curriculum if not self.min_input <= n < top]:
            raise PosbenchError(f"task.curriculum stage {bad[0]} of {self.name}: a stage is a longest input in "
                                f"{self.min_input}..{top - 1}, below the longest that fits train_len={train_len} ({top})")

    def output_length(self, n: int) -> int:
        raise NotImplementedError

    def transduce(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(input bytes [n], target bytes [<= output_length(n)]) of one instance of input length n."""
        raise NotImplementedError

    def max_input(self, length: int) -> int:
        """The longest input whose example fits a window of ``length`` tokens (0: none fits)."""
        n = length
        while n >= self.min_input and n + 1 + self.output_length(n) > length + 1:
            n -= 1
        return n if n >= self.min_input else 0

    def band(self, length: int) -> tuple[int, int]:
        """The input lengths (lo, hi], inclusive of hi, an evaluation window of ``length`` scores."""
        return min(self.max_input(length // 2), self.max_input(length) - 1), self.max_input(length)

    def min_length(self) -> int:
        return self.min_input + 1 + self.output_length(self.min_input)

    def chance(self, condition) -> float:
        """A model that writes a constant symbol: 1 / the output alphabet (per token)."""
        return 1 / self.symbols

    def train_condition(self, rng, length):
        top = self.max_input(length) if self.longest is None else min(self.longest, self.max_input(length))
        return int(rng.integers(self.min_input, top + 1))

    def example(self, rng, length, n, text):
        if n is None:
            lo, hi = self.band(length)
            n = int(rng.integers(max(lo, self.min_input - 1) + 1, hi + 1))
        x, y = self.transduce(rng, n)
        pad = np.full(length + 1 - (len(x) + 1 + len(y)), PAD, dtype=np.uint8)
        tokens = np.concatenate([pad, x, [SEPARATOR], y]).astype(np.uint8)
        answer = np.zeros(length, dtype=bool)
        answer[length - len(y):] = True
        return tokens, answer
