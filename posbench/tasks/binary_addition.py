"""Binary addition (Deletang et al. 2023, context-sensitive; reference:
google-deepmind/neural_networks_chomsky_hierarchy ``tasks/cs/binary_addition.py``): two numbers in
little-endian binary joined by ``+`` make an input of n tokens (the first of a uniform 1..n-2 bits, the
second the rest, each a uniform value from 1 to 2^bits - 1, written with its leading zeros), the target
is their sum in little-endian binary without leading zeros, then the termination token::

    001+01101|01011=        (4 + 22 = 26)

The reference pads the output with 0s after the termination token to n + 1 and masks them out of the
accuracy (its ``accuracy_mask``: up to and including the termination token); a decoder has no fixed
output slots, so the target stops at the termination token and every target token is scored, which is
the same set. Chance 1/2 per token: a constant '1' is right at the sum's top bit (always 1) and at
about half of its other bits, and misses the termination token: (1 + (k - 1)/2) / (k + 1) = 1/2 for a
k-bit sum. Inputs of at least 3 tokens (two numbers). Decoder layout and scoring: posbench/tasks/algorithmic.py.

Not in the learned-task study (``experiment=learned_tasks``): no CPU-trained tiny model learned it at
train_len (results/mqar_levers/COMMAND.md: RoPE, 1000 steps, 0.59 per-token accuracy with GPT-2's
initial weights and 0.62 with PyTorch's, chance 0.5; exact match 0). Transformers learn and extrapolate
addition with scratchpads or index hints (Anil et al. 2022, arXiv 2207.04901; Zhou et al. 2024, "What
Algorithms can Transformers Learn?", arXiv 2310.16028, and "Transformers Can Achieve Length
Generalization But Not Robustly", arXiv 2402.09371: index hints and reversed digits); those change the
input format, and what extrapolates then is the hint lookup, so the task would need its own design and
validation at this scale. It stays as the references define it, for the algorithmic preset.
"""

from __future__ import annotations

import numpy as np

from posbench.tasks import register
from posbench.tasks.algorithmic import AlgorithmicTask

PLUS = ord("+")
END = ord("=")  # the reference's termination token (its symbol 2)


def little_endian(value: int, bits: int = 0) -> bytes:
    """``value`` in little-endian binary, at least ``bits`` digits (leading zeros at the end)."""
    return format(value, "b").zfill(bits)[::-1].encode()


def random_int(rng: np.random.Generator, bits: int) -> int:
    """A uniform integer in 1 .. 2^bits - 1 (bits may exceed 64: Python integers, as the reference)."""
    while True:
        v = int.from_bytes(rng.bytes((bits + 7) // 8), "little") & ((1 << bits) - 1)
        if v:
            return v


@register("binary_addition")
class BinaryAddition(AlgorithmicTask):
    level = "context-sensitive"
    min_input = 3

    def output_length(self, n):
        return n  # the sum has at most max(bits) + 1 <= n - 1 bits, then the termination token

    def transduce(self, rng, n):
        a_bits = int(rng.integers(1, n - 1))
        b_bits = n - 1 - a_bits
        a, b = random_int(rng, a_bits), random_int(rng, b_bits)
        x = little_endian(a, a_bits) + bytes([PLUS]) + little_endian(b, b_bits)
        y = little_endian(a + b) + bytes([END])
        return np.frombuffer(x, np.uint8), np.frombuffer(y, np.uint8)
