"""posbench/attention/positions.py: the positions of randomized-position training and of PoSE."""

import torch

from posbench.attention.positions import pose_positions


def test_pose_positions_skip_within_the_target():

    seen_skips = set()
    for step in range(50):
        p = pose_positions(64, 256, 0, step)
        assert len(p) == 64 and p[0] == 0 and torch.all(p[1:] > p[:-1]) and p[-1] < 256
        jumps = torch.nonzero(p[1:] - p[:-1] != 1)
        assert len(jumps) <= 1 and (len(jumps) == 0 or jumps[0, 0] + 1 <= 32)  # the first chunk: 1..32 tokens
        seen_skips.add(int(p[-1] - 63))
    assert torch.equal(pose_positions(64, 256, 0, 3), pose_positions(64, 256, 0, 3))
    assert max(seen_skips) > 100 and min(seen_skips) >= 0


def test_randomized_positions_are_sorted_distinct_and_reproducible():
    from posbench.attention.positions import sample_positions as random_positions

    a, b = random_positions(1024, 64, 0, 5), random_positions(1024, 64, 0, 5)
    assert a.equal(b) and a.shape == (64,) and bool((a[1:] > a[:-1]).all()) and int(a.max()) < 1024
    assert not a.equal(random_positions(1024, 64, 0, 6))
