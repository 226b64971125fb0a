"""T5 relative position bias (Raffel et al. 2020, section 2.1).

A learned scalar per head and distance bucket, added to the logits and shared across layers:
b[h, i, j] = table[bucket(j - i), h]. Buckets: exact for small distances (half of them), then
logarithmically wider up to ``max_distance``, beyond which all distances share the last bucket.
In a causal decoder only j <= i is used, so all buckets go to the past (``causal=True``).
Reference code followed: ``_relative_position_bucket`` of HF transformers' ``modeling_t5.py``
(mesh-tensorflow's), 32 buckets.

Deviation, scaled to toy lengths: T5 uses max_distance 128 with inputs of 512, so every bucket is
reached in training. posbench's default max_distance is the largest training distance + 1
(train_len, or train.random_positions), so that every bucket evaluation uses was trained; a
max_distance whose last bucket no training distance reaches is refused (its bias would stay at
its initial value and be read at every long distance in evaluation).

The bias's scale (``bias_scale``). T5 computes ``logits = q'.k + b`` with no 1/sqrt(d)
(Mesh TensorFlow ``transformer/attention.py`` ``attention()``: ``logits = einsum(q, k); logits +=
bias``; HF ``T5Attention``: ``self.scaling = 1.0``) and folds the 1/sqrt(d_head) into the query's
initialisation instead (Mesh TF ``AttentionParams``: q ~ N(0, (d_model * d_kv)^-1/2), k and v
~ N(0, d_model^-1/2); HF ``T5PreTrainedModel._init_weights`` the same, and the bias table ~
N(0, d_model^-1/2), the scale of k). posbench computes ``q.k / sqrt(d_head) + b``: with q' =
q / sqrt(d_head) that is T5's formula, term for term (tests/encodings/test_t5.py checks it against
HF's T5Attention), so ``bias_scale=none`` (the default) is T5's function. It is also T5's training:
T5 trained with Adafactor, whose step is relative to each matrix's scale (Mesh TF
``AdafactorOptimizer(multiply_by_parameter_scale=True)``), so in T5 the table moves sqrt(d_kv)
times as fast as W_q' and as fast as W_k, as its initialisation is sqrt(d_kv) times W_q''s and
equal to W_k's. Under posbench's AdamW every weight moves by ~lr whatever its scale, and W_q'
= W_q / sqrt(d_head): the table again moves sqrt(d_head) times as fast as W_q' and as fast as W_k,
and starts at W_k's scale (both N(0, 0.02)). ``bias_scale=sqrt_dhead`` is x-transformers'
parametrisation (``RelativePositionBias(scale=dim_head ** 0.5)`` added to ``q.k * dim_head **
-0.5``): the table times sqrt(d_head), i.e. a sqrt(d_head) larger initial bias and learning rate
(under Adam) than T5's against every other weight; kept as an option, not the default. Every
committed T5 row was made with ``none``, which is left out of the run id (posbench/store/
identity.py), so those runs keep their ids.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from posbench.core.errors import PosbenchError
from posbench.core.params import at_least, one_of, param, positive
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
    family, colour, order = "score bias", "#9467bd", 4  # the report's column, line colour and place in it
    integer_positions = True  # a table indexed by position or distance: real-valued positions are refused
    translation_invariant = True

    @dataclass
    class Params:
        num_buckets: int | None = param(None, positive)  # None: 32 (T5's), fewer when training distances are fewer than 32
        max_distance: int | None = param(None, positive)  # None: the largest training distance + 1
        init_std: float = param(0.02, at_least(0))  # 0 is meaningful here
        # none: T5's (the table as is, beside q.k / sqrt(d_head)); sqrt_dhead: x-transformers' table x sqrt(d_head)
        bias_scale: str = param("none", one_of("none", "sqrt_dhead"))

    def __init__(self, shape, params):
        super().__init__(shape, params)
        trained = max(shape.train_len, shape.max_position)  # distances 0 .. trained - 1 occur in training
        self.max_distance = params.max_distance or trained
        self.num_buckets = params.num_buckets or min(32, trained)
        max_exact = self.num_buckets // 2
        if self.num_buckets < 2 or self.max_distance <= max_exact:
            raise PosbenchError(f"t5 needs max_distance > num_buckets / 2 = {max_exact}, got max_distance={self.max_distance} "
                                f"(num_buckets={self.num_buckets}); use fewer buckets or a longer train_len")
        last = relative_position_bucket(torch.tensor([-(trained - 1)]), True, self.num_buckets, self.max_distance).item()
        if last < self.num_buckets - 1:
            raise PosbenchError(
                f"t5 max_distance={self.max_distance}: training distances (up to {trained - 1}) reach only buckets "
                f"0..{last} of {self.num_buckets}; evaluation would read untrained buckets. Use max_distance <= "
                f"{trained} (or null)")
        self.table = nn.Embedding(self.num_buckets, shape.n_heads)
        nn.init.normal_(self.table.weight, std=params.init_std)
        # a constant factor, not a scaled init: under Adam it scales the table's learning rate as well
        self.scale = math.sqrt(shape.head_dim) if params.bias_scale == "sqrt_dhead" else None

    def bias(self, q_pos, k_pos, layer):
        rel = k_pos[None, :] - q_pos[:, None]
        bucket = relative_position_bucket(rel, True, self.num_buckets, self.max_distance)
        b = self.table(bucket).permute(2, 0, 1)  # [H, Lq, Lk]
        return b if self.scale is None else b * self.scale
