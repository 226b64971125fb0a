"""The floor-log row (posbench/evaluation/variants/floorlog.py): Llama 4's temperature,
1 + beta ln(1 + floor((pos + 1) / floor_scale)), on the queries of the layers without one of their own."""

import torch

from posbench.attention.options import AttentionOptions
from posbench.attention.temperatures import floor_log_scale
from posbench.evaluation.variants import make_variant
from posbench.evaluation.variants.floorlog import FloorLog


def test_the_floor_scale_defaults_to_train_len_and_other_settings_name_the_row():
    v = make_variant("floorlog")
    assert isinstance(v, FloorLog) and v.suffix() == "+floorlog"
    pos = torch.arange(100)
    scale = v.options(AttentionOptions(), 100, 16).query_scale(pos, pos + 1)
    torch.testing.assert_close(scale, floor_log_scale(pos, pos + 1, 16, 0.1))
    assert torch.all(scale[:15] == 1) and scale[15] > 1  # floor((15 + 1) / 16) = 1
    assert make_variant("floorlog", {"beta": 0.2, "floor_scale": 8}).suffix() == "+floorlog0.2@8"
