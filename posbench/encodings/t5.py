"""T5 relative position bias (Raffel et al. 2020).

A learned scalar per head and distance bucket, added to the logits and shared across layers:
b[h, i, j] = table[bucket(j - i), h]. Buckets: exact for small distances (half of them), then
logarithmically wider up to ``max_distance``, beyond which all distances share the last bucket.
In a causal decoder only j <= i is used, so all buckets go to the past (``causal=True``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


def relative_position_bucket(
    relative_position: torch.Tensor, causal: bool, num_buckets: int = 32, max_distance: int = 128
) -> torch.Tensor:
    """T5's bucket of ``relative_position = key_position - query_position``.

    Bidirectional (causal=False): half the buckets for keys after the query, half for keys before.
    Causal: future keys (relative_position > 0) all map to bucket 0, with distance 0.
    """
    buckets = torch.zeros_like(relative_position)
    if causal:
        n = (-relative_position).clamp(min=0)
    else:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        n = relative_position.abs()
    max_exact = num_buckets // 2
    is_small = n < max_exact
    # log-spaced buckets from max_exact to max_distance
    large = max_exact + (
        torch.log(n.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).long()
    large = large.clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, n, large)


@register("t5")
class T5Bias(PositionalEncoding):
    uses_bias = True
    translation_invariant = True

    @dataclass
    class Params:
        ZERO_OK = ("init_std",)  # 0 is meaningful here
        num_buckets: int = 32
        max_distance: int = 128
        init_std: float = 0.02

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.table = nn.Embedding(params.num_buckets, shape.n_heads)
        nn.init.normal_(self.table.weight, std=params.init_std)

    def bias(self, q_pos, k_pos, layer):
        rel = k_pos[None, :] - q_pos[:, None]
        bucket = relative_position_bucket(rel, True, self.params.num_buckets, self.params.max_distance)
        return self.table(bucket).permute(2, 0, 1)
