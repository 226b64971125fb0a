"""Duplicate string (Deletang et al. 2023, context-sensitive; reference:
google-deepmind/neural_networks_chomsky_hierarchy ``tasks/cs/duplicate_string.py``, binary alphabet as in
randomized_positional_encodings ``experiments/constants.py``): write the string twice, ``011|011011``. 2n
target tokens; chance 1/2 per token. ``copy`` (posbench/tasks/copy.py) is the single copy over letters with
strings of L/2; this is the reference's task. Decoder layout and scoring: posbench/tasks/algorithmic.py."""

from __future__ import annotations

import numpy as np

from posbench.tasks import register
from posbench.tasks.algorithmic import AlgorithmicTask, digits


@register("duplicate_string")
class DuplicateString(AlgorithmicTask):
    level = "context-sensitive"

    def output_length(self, n):
        return 2 * n

    def transduce(self, rng, n):
        s = rng.integers(0, 2, size=n)
        return digits(s), digits(np.concatenate([s, s]))
