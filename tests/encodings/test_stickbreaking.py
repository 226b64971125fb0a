"""Stick-breaking attention (posbench/encodings/stickbreaking.py) against the reference definition,
whole and in blocks of queries, with blockwise causal keys."""

import math

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.encodings import ModelShape, build_encoding
from tests.helpers import attn_output, layer_inputs, model_of

X = torch.Generator().manual_seed(1)


def reference_stick_breaking(q, k, v, attend_current=False, keep=None):
    """Stick-breaking attention pair by pair, as shawntan/stickbreaking-attention's tests define it:
    A_ij = beta_ij prod_{j < t <= last} (1 - beta_it), last = i - 1 (i with attend_current), and
    out_i = sum_j A_ij v_j + (1 - sum_j A_ij) v_i. ``keep(i, j)``: which keys exist (bca)."""
    B, H, L, D = q.shape
    beta = torch.sigmoid(q @ k.transpose(-1, -2) / math.sqrt(D))
    out = torch.zeros_like(v)
    for i in range(L):
        last = i if attend_current else i - 1
        keys = [j for j in range(last + 1) if keep is None or keep(i, j)]
        total = torch.zeros(B, H, dtype=q.dtype)
        for j in keys:
            a = beta[:, :, i, j].clone()
            for t in keys:
                if t > j:
                    a = a * (1 - beta[:, :, i, t])
            out[:, :, i] += a[..., None] * v[:, :, j]
            total += a
        out[:, :, i] += (1 - total)[..., None] * v[:, :, i]
    return out


@pytest.mark.parametrize("attend_current", [False, True])
def test_stick_breaking_matches_the_reference_definition(attend_current):
    model = model_of("stickbreaking", {"attend_current": attend_current})
    x = torch.randint(0, 256, (2, 21), generator=X)
    a, q, k, v = layer_inputs(model, x, 2)
    y = reference_stick_breaking(q, k, v, attend_current)
    torch.testing.assert_close(attn_output(model, x, 2), model.blocks[2].attn.proj(y.transpose(1, 2).reshape(2, 21, 32)))
    if not attend_current:  # the first token has no earlier key: the whole stick is left, its own value
        torch.testing.assert_close(y[:, :, 0], v[:, :, 0])


def test_stick_breaking_in_blocks_of_queries_and_with_blockwise_causal_keys():
    from posbench.attention.kernels import future_mask, stick_breaking_attention

    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 2, 19, 8, generator=g, dtype=torch.float64) for _ in range(3))
    whole = stick_breaking_attention(q, k, v)
    torch.testing.assert_close(stick_breaking_attention(q, k, v, max_elements=4 * 2 * 19 * 3), whole)  # 3 queries a block
    hidden = future_mask(0, 19, "cpu", block=4)
    torch.testing.assert_close(stick_breaking_attention(q, k, v, block=4),
                               reference_stick_breaking(q, k, v, keep=lambda i, j: not hidden[i, j]))


def test_without_the_remainder_the_stick_left_over_is_dropped():
    """With the remainder (the default) every query's weights and remainder sum to one: on values of
    ones the output is one; without it the first query (no earlier key) outputs nothing."""
    from posbench.encodings.stickbreaking import StickBreaking

    q, k = torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)
    ones = torch.ones(1, 2, 6, 8)
    whole = build_encoding("stickbreaking", ModelShape(16, 2, 1, 16))
    assert isinstance(whole, StickBreaking)
    torch.testing.assert_close(whole.relative_attention(q, k, ones, torch.arange(6), 0, AttentionOptions()), ones)
    dropped = build_encoding("stickbreaking", ModelShape(16, 2, 1, 16), {"remainder": False})
    out = dropped.relative_attention(q, k, ones, torch.arange(6), 0, AttentionOptions())
    assert torch.all(out[:, :, 0] == 0) and torch.all(out[:, :, 1:] < 1)
