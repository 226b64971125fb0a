"""DeepSeek's decoupled RoPE (posbench/encodings/decoupled_rope.py): each head's first rope_dim channels
rotate (spectrum over those channels), with one rotary key slice shared by the heads; the rest carry
no position."""

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, build_encoding
from posbench.encodings.rope import apply_rotation, rotation_tables


def test_logits_are_the_position_free_part_plus_rope_on_a_shared_key_slice():
    enc = build_encoding("decoupled_rope", ModelShape(64, 4, 2, 64))  # d_h 16: rope_dim 4 (a third, even)
    assert enc.rotary_dim == 4
    q, k = torch.randn(2, 4, 9, 16, dtype=torch.float64), torch.randn(2, 4, 9, 16, dtype=torch.float64)
    pos = torch.arange(9)
    qr, kr = enc.rotate(q, k, enc.prepare(pos, AttentionOptions()))
    logits = qr @ kr.transpose(-1, -2)
    # by hand: DeepSeek's k^R is one vector per token (here the mean of the heads' first 4 key channels)
    inv = 10000.0 ** (-torch.arange(0, 4, 2, dtype=torch.float64) / 4)
    cos, sin = rotation_tables(pos, inv)
    k_rope = apply_rotation(k[..., :4].mean(1, keepdim=True), cos.double(), sin.double())
    q_rope = apply_rotation(q[..., :4], cos.double(), sin.double())
    want = q[..., 4:] @ k[..., 4:].transpose(-1, -2) + q_rope @ k_rope.transpose(-1, -2)
    torch.testing.assert_close(logits, want)
    assert torch.equal(kr[:, :1, :, :4].expand(-1, 4, -1, -1), kr[..., :4])  # the same rotary key in every head


def test_only_the_rotary_slice_sees_positions():
    enc = build_encoding("decoupled_rope", ModelShape(64, 4, 2, 64), {"rope_dim": 6})
    q, k = torch.randn(1, 4, 5, 16), torch.randn(1, 4, 5, 16)
    a = enc.rotate(q, k, enc.prepare(torch.arange(5), AttentionOptions()))
    b = enc.rotate(q, k, enc.prepare(torch.arange(5) + 100, AttentionOptions()))
    torch.testing.assert_close(a[0][..., 6:], b[0][..., 6:])
    torch.testing.assert_close(a[1][..., 6:], k[..., 6:])
    assert not torch.allclose(a[0][..., :6], b[0][..., :6])


@pytest.mark.parametrize("rope_dim", [3, 18])
def test_a_rope_dim_that_is_odd_or_wider_than_the_head_is_one_line(rope_dim):
    with pytest.raises(PosbenchError, match=f"encoding.rope_dim={rope_dim} must be an even number from 2 to the head width 16"):
        build_encoding("decoupled_rope", ModelShape(64, 4, 2, 64), {"rope_dim": rope_dim})
