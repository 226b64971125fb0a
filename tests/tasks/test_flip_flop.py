"""posbench/tasks/flip_flop.py: write / ignore / read instructions, each read scored with the last written bit;
the sparse and dense variants; a perfect model scores 1, a constant one 1/2."""

import numpy as np
import pytest

from posbench.tasks import build_task
from tests.tasks.scoring import constant, perfect, scores


def test_every_read_is_the_last_written_bit():
    task = build_task("flip_flop")
    for seed in range(20):
        tokens, answer = task.example(np.random.default_rng(seed), 63, 0.5, None)
        s = bytes(tokens)
        ops, bits = s[0::2], s[1::2]
        assert ops[0:1] == b"w" and ops[-1:] == b"r" and len(s) == 64
        last, reads = None, []
        for i, (op, bit) in enumerate(zip(ops, bits)):
            last = bit if op == ord("w") else last
            if op == ord("r"):
                assert bit == last
                reads.append(2 * i)  # the prediction at the read's letter is its bit
        assert np.flatnonzero(answer).tolist() == reads


def test_the_ignore_probability_makes_the_sparse_and_dense_variants():
    task = build_task("flip_flop")
    assert task.conditions() == [0.8, 0.98, 0.1] and task.params.loss == "mixed"
    rng = np.random.default_rng(0)
    share = {p: np.mean([np.mean(task.example(rng, 511, p, None)[0][0::2][1:-1] == ord("i")) for _ in range(20)])
             for p in task.conditions()}
    assert share == pytest.approx({0.8: 0.8, 0.98: 0.98, 0.1: 0.1}, abs=0.02)


def test_a_perfect_model_scores_one_and_a_constant_one_chance():
    task = build_task("flip_flop")
    assert scores(task, 128, perfect, condition=0.8) == (1.0, 1.0)
    assert scores(task, 128, constant("0"), condition=0.1, examples=1000)[1] == pytest.approx(0.5, abs=0.02)


def test_sparse_sequences_hold_their_reads_farther_from_the_write_than_dense_ones():
    """Going back from a read, each earlier instruction is a write with probability (1 - p_i) / 2, so the
    distance to the bit it returns is geometric with mean 2 / (1 - p_i) instructions (cut at the sequence's
    start, where the first write is): 2.2 dense, 10 in-distribution, up to 100 sparse."""
    task = build_task("flip_flop")
    rng = np.random.default_rng(0)

    def mean_gap(p):
        gaps = []
        for _ in range(40):
            ops = task.example(rng, 511, p, None)[0][0::2]
            last = 0
            for i, op in enumerate(ops):
                if op == ord("w"):
                    last = i
                elif op == ord("r"):
                    gaps.append(i - last)
        return np.mean(gaps)

    dense, trained, sparse = mean_gap(0.1), mean_gap(0.8), mean_gap(0.98)
    assert dense == pytest.approx(2 / 0.9, rel=0.1) and trained == pytest.approx(10, rel=0.15)
    assert sparse > 3 * trained
