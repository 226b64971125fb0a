"""posbench/hf/attention.py: grouped-query keys and values get one head per query head, each key head
serving its own group in order (as transformers' repeat_kv)."""

import torch

from posbench.hf.attention import one_head_per_query


def test_grouped_keys_and_values_are_repeated_to_the_query_heads_in_group_order():
    q = torch.zeros(1, 4, 3, 2)
    k = torch.arange(2.0).view(1, 2, 1, 1).expand(1, 2, 3, 2)
    v = k + 10
    k4, v4 = one_head_per_query(q, k, v)
    assert k4[0, :, 0, 0].tolist() == [0, 0, 1, 1] and v4[0, :, 0, 0].tolist() == [10, 10, 11, 11]
    same_k, same_v = one_head_per_query(q, k4, v4)
    assert same_k is k4 and same_v is v4  # as many key heads as query heads: unchanged
