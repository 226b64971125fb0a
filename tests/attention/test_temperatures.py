"""posbench/attention/temperatures.py: the logn and floor-log query scales are Qwen's and Llama 4's,
and as rows they change nothing up to the training length."""

import math

import torch

from posbench.attention.options import AttentionOptions
from posbench.evaluation.variants import make_variant
from tests.helpers import model_of

X = torch.Generator().manual_seed(1)


def test_logn_and_floorlog_rows_scale_queries_as_qwen_and_llama4():
    from posbench.attention.temperatures import floor_log_scale, logn_scale

    T = 16
    pos = torch.arange(300)
    qwen = torch.tensor([math.log(i, T) if i > T else 1 for i in range(1, 301)])  # modeling_qwen's logn_list
    torch.testing.assert_close(logn_scale(pos, pos + 1, T), qwen.float())
    llama = torch.log1p(torch.floor((pos.float() + 1) / T)) * 0.1 + 1
    torch.testing.assert_close(floor_log_scale(pos, pos + 1, T, 0.1), llama)
    # as rows: nothing changes at 1x; past it every (global) layer's queries are scaled
    model = model_of("rope")
    x = torch.randint(0, 256, (1, 64), generator=X)
    for name in ("logn", "floorlog"):
        variant = make_variant(name)
        assert variant.options(AttentionOptions(), 64, T).query_scale is not None
        with torch.no_grad():
            plain, row = model(x), model(x, None, variant.options(AttentionOptions(), 64, T))
        torch.testing.assert_close(row[:, : T - 1], plain[:, : T - 1])
        assert not torch.allclose(row[:, -1], plain[:, -1])
