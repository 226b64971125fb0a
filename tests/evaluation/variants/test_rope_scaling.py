"""The RoPE-scaling rows (posbench/evaluation/variants/rope_scaling.py): PoSE is no evaluation row."""

import pytest

from posbench.core.errors import PosbenchError


def test_pose_is_no_evaluation_row(compose):
    with pytest.raises(PosbenchError, match="unknown eval.rope_scaling 'pose'; valid: linear, ntk, dynamic_ntk, yarn, "
                                            "llama3, longrope, abf, drope"):
        compose("encoding=rope", "eval.rope_scaling=[pose]").check()
