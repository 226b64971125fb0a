"""Parity check (Deletang et al. 2023, regular; reference: google-deepmind/neural_networks_chomsky_hierarchy
``tasks/regular/parity_check.py``): is the number of 1s in a binary string odd? ``0110|0``, ``111|1``.
One target token; chance 1/2. Decoder layout and scoring: posbench/tasks/algorithmic.py.

Not in the learned-task study (``experiment=learned_tasks``): no CPU-trained tiny model learned it at
train_len (results/mqar_levers/COMMAND.md: RoPE, 1000 steps, 0.56 per-token accuracy with GPT-2's
initial weights and 0.47 with PyTorch's, chance 0.5), and Deletang et al. 2023 find transformers fail
parity whatever their encoding; a score beyond train_len of a model at chance says nothing about
extrapolation. A scratchpad (Anil et al. 2022, arXiv 2207.04901: the running parity written after each
bit) would make it learnable, but it changes the task: each scratchpad bit depends on the one before
and one input bit at a fixed offset, a local lookup like flip_flop's, so it would measure that lookup,
not parity; it is left for a study that wants that task, not added here.
"""

from __future__ import annotations


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
