"""HoPE (posbench/encodings/hope.py): RoPE on the pairs that turn a full period within train_len, zero
frequency on the others; p_rope with the fraction derived from the training length."""

import math

import torch

from posbench.attention.options import AttentionOptions
from posbench.encodings import ModelShape, build_encoding
from posbench.encodings.hope import turning_pairs
from posbench.model.transformer import ModelConfig, build_model

SMALL_HEAD = ModelConfig(name="t", d_model=64, n_layers=2, n_heads=2)  # d_h 32, as the small model's


def test_the_kept_pairs_are_those_that_turn_a_full_period_within_the_training_length():
    # theta_i = 10000^(-2i/32): theta_4 x 64 = 6.4 >= 2 pi, theta_5 x 64 = 3.6 < 2 pi
    assert turning_pairs(32, 10000.0, 64) == 5
    assert turning_pairs(32, 10000.0, 256) == 7
    enc = build_encoding("hope", ModelShape(64, 2, 2, 64))
    inv_freq, _ = enc.frequencies(AttentionOptions(), 64)
    assert torch.all(inv_freq[:5] * 64 >= 2 * math.pi) and torch.all(inv_freq[5:] == 0)
    assert torch.equal(inv_freq[:5], 10000.0 ** (-2 * torch.arange(5, dtype=torch.float64) / 32))


def test_hope_is_p_rope_at_the_derived_fraction():
    x = torch.randint(0, 256, (2, 40))
    torch.manual_seed(0)
    hope = build_model(SMALL_HEAD, "hope", {}, 64).eval()
    torch.manual_seed(0)
    p_rope = build_model(SMALL_HEAD, "p_rope", {"fraction": 5 / 16}, 64).eval()
    with torch.no_grad():
        torch.testing.assert_close(hope(x), p_rope(x))
        # and differs from p-RoPE's default fraction (0.75: 12 of 16 pairs turn)
        torch.manual_seed(0)
        default = build_model(SMALL_HEAD, "p_rope", {}, 64).eval()
        assert not torch.allclose(hope(x), default(x), atol=1e-4)


def test_the_position_free_channels_ignore_positions():
    """q.k on the zeroed pairs is the same at any positions; on the kept pairs it is RoPE's."""
    enc = build_encoding("hope", ModelShape(64, 2, 2, 64))
    q, k = torch.randn(1, 2, 6, 32), torch.randn(1, 2, 6, 32)
    a = enc.rotate(q, k, enc.prepare(torch.arange(6), AttentionOptions()))
    b = enc.rotate(q, k, enc.prepare(torch.arange(6) + 500, AttentionOptions()))
    low = torch.cat((torch.arange(5, 16), torch.arange(21, 32)))  # rotate-half: pair i is channels i and i + 16
    torch.testing.assert_close(a[0][..., low], q[..., low])
    torch.testing.assert_close(b[1][..., low], k[..., low])
