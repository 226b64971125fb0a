"""Bucket sort (Deletang et al. 2023, context-sensitive; reference: google-deepmind/neural_networks_chomsky_hierarchy
``tasks/cs/bucket_sort.py``, alphabet of 5 as in randomized_positional_encodings ``experiments/constants.py``):
sort a string over 0..4, ``20413|01234``. n target tokens; chance 1/5 per token (a constant symbol c is right
at the count of c's positions of the sorted string, n/5 in expectation). Decoder layout and scoring:
posbench/tasks/algorithmic.py."""

from __future__ import annotations

import numpy as np

from posbench.tasks import register
from posbench.tasks.algorithmic import AlgorithmicTask, digits

ALPHABET = 5


@register("bucket_sort")
class BucketSort(AlgorithmicTask):
    level = "context-sensitive"
    symbols = ALPHABET

    def output_length(self, n):
        return n

    def transduce(self, rng, n):
        s = rng.integers(0, ALPHABET, size=n)
        return digits(s), digits(np.sort(s))
