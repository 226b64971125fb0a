"""Parity check (Deletang et al. 2023, regular; reference: google-deepmind/neural_networks_chomsky_hierarchy
``tasks/regular/parity_check.py``): is the number of 1s in a binary string odd? ``0110|0``, ``111|1``.
One target token; chance 1/2. Decoder layout and scoring: posbench/tasks/algorithmic.py."""

from __future__ import annotations

import numpy as np

from posbench.tasks import register
from posbench.tasks.algorithmic import AlgorithmicTask, digits


@register("parity_check")
class ParityCheck(AlgorithmicTask):
    level = "regular"

    def output_length(self, n):
        return 1

    def transduce(self, rng, n):
        bits = rng.integers(0, 2, size=n)
        return digits(bits), digits([bits.sum() % 2])
