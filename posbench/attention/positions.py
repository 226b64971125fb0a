"""Position ids other than 0..L-1 for a training window: randomized positions (sample_positions) and
PoSE's skip-wise positions (pose_positions).

Randomized positions (Ruoss et al. 2023, "Randomized Positional Encodings Boost Length
Generalization of Transformers"; reference code google-deepmind/randomized_positional_encodings):
a window of L tokens gets a sorted sample of L distinct positions from [0, M) with M >= L, so an
encoding sees positions up to M - 1 while training on short windows. The authors' code samples at
evaluation too; posbench evaluates such a model both ways (plain 0..L-1, and ``+randpos``).

Random Float Sampling (Shimizu, Taniguchi & Matsuo, EACL 2026 Findings, arXiv 2602.14050;
``train.random_positions_kind=float``): the same, with real-valued positions, a sorted sample of L
reals drawn uniformly from [0, M), in training and for the ``+randpos`` row at evaluation ("continuous
indices from a shared range during both training and inference"). Only the paper's abstract and
summaries of it could be read here (no code found): the uniform draw from [0, M) with M = the
integer scheme's bound is this harness's reading, so that the two schemes differ only in integer
versus real positions. Encodings that index a table by position or distance (learned, T5, Shaw,
Sandwich: ``PositionalEncoding.integer_positions``) refuse it.

PoSE's skip-wise position ids (Zhu et al. 2024, "PoSE: Efficient Context Window Extension of LLMs via
Positional Skip-wise Training"; dwzhu-pku/PoSE ``src/train_pose.py``, ``train_preprocess_function_pose``).

An extension run with ``extend.method=pose`` (linear frequencies, the paper's main setting) or
``pose_yarn`` fine-tunes on windows of the training length L whose position ids reach the target T:
the window is cut in two chunks, the first of r1 ~ U{1, ..., ceil(L / 2)} tokens at positions
0..r1-1, the second at positions shifted by u ~ U{0, ..., T - L}:

    positions = [0, 1, ..., r1 - 1, r1 + u, ..., L - 1 + u]

(the reference's current revision: the first chunk always starts at 0, "more uniform coverage of
large relative positions"). Deviations, for toy size: one draw per step shared by the batch (the
model takes one position tensor per forward, as ``train.random_positions`` does; the reference draws
per example), from (seed, step) so that a resumed run is bit-identical; and the text is one
contiguous window, where the reference takes the second chunk from further into a document of up
to 5 L tokens (so the only change from the "continued training" control is the positions).
"""

from __future__ import annotations

import numpy as np
import torch

# train.random_positions_kind: Ruoss et al.'s distinct integers, or Random Float Sampling's reals
RANDOM_POSITION_KINDS = ("integer", "float")


def sample_positions(max_position: int, length: int, seed: int, step: int, continuous: bool = False) -> torch.Tensor:
    """A sorted sample of ``length`` distinct positions from [0, max_position), reproducible from
    (seed, step): one per training step (shared by the batch), or per batch of evaluation windows.
    ``continuous``: real numbers drawn uniformly from [0, max_position) and sorted (float32), Random
    Float Sampling's positions; else integers without replacement (Ruoss et al.)."""
    rng = np.random.default_rng([seed, step, 1])
    if continuous:
        return torch.from_numpy(np.sort(rng.uniform(0.0, max_position, size=length))).float()
    return torch.from_numpy(np.sort(rng.choice(max_position, size=length, replace=False)))


def pose_positions(train_len: int, target: int, seed: int, step: int) -> torch.Tensor:
    """The position ids of one fine-tuning step's windows of ``train_len`` tokens, reaching ``target``."""
    rng = np.random.default_rng([seed, step, 3])
    first = int(rng.integers(1, (train_len + 1) // 2 + 1))  # random.randint(1, (len_chunk + 1) // 2)
    skip = int(rng.integers(0, max(0, target - train_len) + 1))  # random.randint(0, scaled_max - len)
    positions = np.arange(train_len)
    positions[first:] += skip
    return torch.from_numpy(positions)
