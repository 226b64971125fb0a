"""Reverse string (Deletang et al. 2023, deterministic context-free; reference:
google-deepmind/neural_networks_chomsky_hierarchy ``tasks/dcf/reverse_string.py``, binary alphabet as in
randomized_positional_encodings ``experiments/constants.py``): ``0111|1110``. n target tokens; chance 1/2 per
token. Decoder layout and scoring: posbench/tasks/algorithmic.py."""

from __future__ import annotations

from posbench.tasks import register
from posbench.tasks.algorithmic import AlgorithmicTask, digits


@register("reverse_string")
class ReverseString(AlgorithmicTask):
    level = "context-free"

    def output_length(self, n):
        return n

    def transduce(self, rng, n):
        s = rng.integers(0, 2, size=n)
        return digits(s), digits(s[::-1])
