"""RoPE (posbench/encodings/rope.py): scores depend only on the offset, the known frequencies, and
the scalings (linear, NTK, dynamic NTK, YaRN) set at evaluation and never stored."""

import math

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.encodings import ModelShape, build_encoding
from posbench.encodings.rope import rope_frequencies
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import rows
from tests.helpers import tiny_model


def test_rope_scores_depend_only_on_offset():
    enc = build_encoding("rope", ModelShape(64, 2, 1, 16))
    q, k = torch.randn(1, 2, 1, 32, dtype=torch.float64), torch.randn(1, 2, 1, 32, dtype=torch.float64)

    def score(m, n):
        cos_q, sin_q, _ = enc.prepare(torch.tensor([m]), AttentionOptions())
        cos_k, sin_k, _ = enc.prepare(torch.tensor([n]), AttentionOptions())
        qr, _ = enc.rotate(q, q, (cos_q.double(), sin_q.double()))
        kr, _ = enc.rotate(k, k, (cos_k.double(), sin_k.double()))
        return (qr * kr).sum(-1)

    assert torch.allclose(score(5, 2), score(105, 102), atol=1e-9)
    assert torch.allclose(score(1000, 990), score(10, 0), atol=1e-9)
    assert not torch.allclose(score(5, 2), score(5, 3), atol=1e-6)


def test_rope_frequencies_known_values():
    f, scale = rope_frequencies(8, base=10000.0)
    assert torch.allclose(f, torch.tensor([1.0, 0.1, 0.01, 0.001], dtype=torch.float64)) and scale == 1.0
    with pytest.raises(ValueError):
        rope_frequencies(7)


@pytest.mark.parametrize("scaling", ["ntk", "yarn", "linear", "dynamic_ntk"])
def test_rope_scalings_with_factor_one_are_plain_rope(scaling):
    plain, _ = rope_frequencies(32)
    scaled, attn = rope_frequencies(32, scaling=scaling, factor=1.0, original_length=64, length=64)
    assert torch.allclose(scaled, plain) and attn == 1.0


def test_linear_interpolation_is_plain_rope_at_positions_over_s():
    from posbench.encodings.rope import rotation_tables

    s = 4.0
    lin, _ = rope_frequencies(32, scaling="linear", factor=s)
    plain, _ = rope_frequencies(32)
    pos = torch.arange(0, 256)
    for a, b in zip(rotation_tables(pos, lin), rotation_tables(pos.double() / s, plain)):
        assert torch.allclose(a, b, atol=1e-6)


def test_ntk_and_yarn_known_values():
    d, s = 32, 8.0
    ntk, _ = rope_frequencies(d, scaling="ntk", factor=s)
    assert torch.allclose(ntk, (10000.0 * s ** (d / (d - 2))) ** (-torch.arange(0, d, 2, dtype=torch.float64) / d))
    plain, _ = rope_frequencies(d)
    yarn, attn = rope_frequencies(d, scaling="yarn", factor=s, original_length=64)
    assert attn == pytest.approx((0.1 * math.log(s) + 1) ** 2)
    assert torch.allclose(yarn[0], plain[0])  # fastest pair: many turns within 64 tokens, kept
    assert torch.allclose(yarn[-1], plain[-1] / s)  # slowest pair: interpolated
    assert torch.all(yarn <= plain + 1e-12) and torch.all(yarn >= plain / s - 1e-12)


def _row_state(enc, row, length):
    """What the encoding computes for one forward of ``row`` at windows of ``length``."""
    return enc.prepare(torch.arange(length), row.options(AttentionOptions(), length, enc.shape.train_len))


def test_rope_extension_is_set_at_evaluation_and_never_stored():
    model = tiny_model("rope", train_len=16)
    assert not any("freq" in k for k in model.state_dict())
    eval_cfg = EvalConfig(rope_scaling=["yarn"], rope_factor=None, multiples=[1, 2, 4], bca=[])
    plain, yarn = rows(model.encoding, eval_cfg)
    assert [plain.name, yarn.name] == ["rope", "rope+yarn@4x"]
    state = _row_state(model.encoding, yarn, 32)  # 2x: still the one static factor, 4
    assert model.encoding.softmax_scale(state) == pytest.approx((0.1 * math.log(4) + 1) ** 2 / math.sqrt(8))
    assert model.encoding.softmax_scale(_row_state(model.encoding, plain, 16)) is None


def test_static_and_dynamic_ntk_differ_where_the_methods_differ():
    """Static NTK uses one factor (the longest multiple) at every length; dynamic NTK takes it from
    the current length: the two agree at the longest length only."""
    enc = tiny_model("rope", train_len=16).encoding
    cfg = EvalConfig(rope_scaling=["ntk", "dynamic_ntk"], rope_factor=None, multiples=[1, 2, 4], bca=[])
    by_name = {r.name: r for r in rows(enc, cfg)}
    assert list(by_name) == ["rope", "rope+ntk@4x", "rope+dynamic_ntk"]
    freqs = {}
    for variant in ("rope+ntk@4x", "rope+dynamic_ntk"):
        for L in (16, 32, 64):
            freqs[variant, L] = enc.frequencies(by_name[variant].options(AttentionOptions(), L, 16), L)[0]
    assert torch.allclose(freqs["rope+ntk@4x", 64], freqs["rope+dynamic_ntk", 64])
    assert not torch.allclose(freqs["rope+ntk@4x", 32], freqs["rope+dynamic_ntk", 32])
    assert torch.allclose(freqs["rope+dynamic_ntk", 16], rope_frequencies(8)[0])  # s = 1 at 1x: plain RoPE
