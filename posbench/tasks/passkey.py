"""Passkey retrieval (Mohtashami & Jaggi 2023, "Landmark Attention", appendix; used by the PI and
YaRN papers to test whether an extended model retrieves far tokens).

The paper hides ``The pass key is 71432. Remember it. 71432 is the pass key.`` in repeated filler
sentences and asks ``What is the pass key? The pass key is`` at the end. A byte-level toy model
trained at 64 tokens has no room for those sentences, so the needle and the question are short
markers, and the haystack is real text (a random stretch of the corpus split, not a repeated
sentence that a model could learn to skip)::

    <filler, depth d> |key=71432| <rest of the filler> |key=71432
                                                             ^^^^^ scored: the k digits

The question repeats the needle's prefix, so the answer is found by looking up what followed the
earlier ``|key=`` (the induction pattern retrieval needs). ``depth`` is the fraction of the filler
before the needle: 0 puts the needle at the start of the window (farthest from the question), 1
right before the question. Evaluation runs a length x depth grid, the needle-in-a-haystack heatmap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.tasks import register
from posbench.tasks.base import Task, text_window

NEEDLE = b"|key="
NEEDLE_END = b"|"
QUESTION = b"|key="


@register("passkey")
class Passkey(Task):
    condition = "depth"

    @dataclass
    class Params(Task.Params):
        digits: int = param(5, positive)  # k: length of the key
        # the language-model loss on the filler text trains the induction circuits that retrieval
        # uses: with it the small RoPE model retrieves at every depth at 1x after 1000 steps, with
        # the answers alone it reaches 29% (results/tasks/COMMAND.md)
        loss: str = "mixed"
        eval_depths: List[float] = field(default_factory=lambda: [0.0, 0.25, 0.5, 0.75, 1.0])

        def check(self) -> None:
            super().check()
            if bad := [d for d in self.eval_depths if not 0 <= d <= 1]:
                raise PosbenchError(f"task.eval_depths are fractions in [0, 1], got {bad[0]:g}")

    def conditions(self) -> list:
        return list(self.params.eval_depths)

    def train_condition(self, rng, length):
        return float(rng.random())

    def answer_distance(self, length, depth) -> int:
        """From the position that predicts the first key digit of the question back to the first key
        digit of the needle (the same for every digit): the window holds ``length + 1`` tokens, the
        needle starts ``round(depth * filler)`` tokens in, the answer's last k tokens end it."""
        k = self.params.digits
        n_filler = length + 1 - (len(NEEDLE) + k + len(NEEDLE_END)) - (len(QUESTION) + k)
        return (length - k) - (int(round(depth * n_filler)) + len(NEEDLE))

    def chance(self, depth) -> float:
        return 10.0 ** -self.params.digits  # every digit guessed

    def min_length(self) -> int:
        return len(NEEDLE) + len(NEEDLE_END) + len(QUESTION) + 2 * self.params.digits

    def example(self, rng, length, depth, text):
        k = self.params.digits
        key = rng.integers(ord("0"), ord("9") + 1, size=k).astype(np.uint8)
        needle = np.concatenate([np.frombuffer(NEEDLE, np.uint8), key, np.frombuffer(NEEDLE_END, np.uint8)])
        question = np.concatenate([np.frombuffer(QUESTION, np.uint8), key])
        n_filler = length + 1 - len(needle) - len(question)
        filler = text_window(rng, text, n_filler)
        cut = int(round(depth * n_filler))
        tokens = np.concatenate([filler[:cut], needle, filler[cut:], question])
        answer = np.zeros(length, dtype=bool)
        answer[-k:] = True
        return tokens, answer
