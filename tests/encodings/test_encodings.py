"""Behaviour every encoding must have, and the known values of the published formulas."""

import math

import pytest
import torch

from posbench.attention.kernels import biased_causal_attention
from posbench.attention.options import AttentionOptions
from posbench.encodings import ENCODINGS, ModelShape, available, build_encoding
from posbench.encodings.alibi import alibi_slopes
from posbench.encodings.rope import rope_frequencies
from posbench.encodings.sinusoidal import sinusoidal_table
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import rows
from posbench.model.transformer import ModelConfig, build_model

TINY = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4)


def tiny_model(name: str, train_len: int = 32):
    torch.manual_seed(0)
    return build_model(TINY, name, {}, train_len).eval()


@pytest.mark.parametrize("name", available())
def test_causality(name):
    """Changing a future token never changes the logits of earlier positions."""
    model = tiny_model(name)
    x = torch.randint(0, 256, (2, 32))
    t = 20
    y = x.clone()
    y[:, t] = (y[:, t] + 1) % 256
    with torch.no_grad():
        a, b = model(x), model(y)
    assert torch.allclose(a[:, :t], b[:, :t], atol=1e-5)
    assert not torch.allclose(a[:, t:], b[:, t:], atol=1e-5)  # and the change is seen from t on


@pytest.mark.parametrize("name", available())
def test_registry_declares_a_consistent_path(name):
    from posbench.encodings.base import PositionalEncoding as Base

    enc = build_encoding(name, ModelShape(32, 4, 2, 16))
    hooks = [enc.uses_input, enc.uses_rotation, enc.uses_bias, enc.uses_relative]
    # the per-layer hooks (posbench/encodings/base.py) are methods that do nothing unless overridden
    hooks += [getattr(type(enc), h) is not getattr(Base, h) for h in ("at", "window", "query_scale", "sink", "gate", "content_bias")]
    assert name == "nope" or any(hooks), f"{name} declares no hook"


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


def test_alibi_slopes_match_the_paper():
    assert torch.allclose(alibi_slopes(8), torch.tensor([2.0 ** -(i + 1) for i in range(8)]))
    # 6 heads: the 4-head slopes, then every other slope of the 8-head sequence
    expected = [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]
    assert torch.allclose(alibi_slopes(6), torch.tensor(expected))
    assert len(alibi_slopes(12)) == 12


def test_alibi_bias_is_zero_on_diagonal_and_decreases_with_distance():
    enc = build_encoding("alibi", ModelShape(32, 4, 1, 16))
    b = enc.bias(torch.tensor([20]), torch.arange(20, 10, -1), 0)[:, 0]  # [H, distances 0..9]
    assert torch.all(b[:, 0] == 0)
    assert torch.all(b[:, 1:] < b[:, :-1])


def test_sinusoidal_table_known_values():
    t = sinusoidal_table(3, 4)
    # PE[p, 0] = sin(p), PE[p, 1] = cos(p), PE[p, 2] = sin(p / 100), PE[p, 3] = cos(p / 100)
    p = 2
    assert t[p].tolist() == pytest.approx([math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)], abs=1e-6)
    assert t[0].tolist() == pytest.approx([0, 1, 0, 1])


def test_learned_is_undefined_past_its_table_and_never_clamps():
    model = tiny_model("learned", train_len=16)
    assert model.encoding.undefined_reason(16) is None
    assert "16 positions" in model.encoding.undefined_reason(17)
    with pytest.raises(ValueError):
        model(torch.zeros(1, 17, dtype=torch.long))


def test_chunked_bias_attention_equals_the_naive_formula():
    torch.manual_seed(0)
    B, H, L, D = 2, 3, 50, 8
    q, k, v = (torch.randn(B, H, L, D) for _ in range(3))
    slopes = torch.tensor([0.5, 0.25, 0.125])
    bias_fn = lambda i, j: -slopes[:, None, None] * (i[:, None] - j[None, :])  # noqa: E731
    pos = torch.arange(L)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) + bias_fn(pos, pos)
    scores = scores.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    naive = scores.softmax(-1) @ v
    whole = biased_causal_attention(q, k, v, bias_fn, pos)
    chunked = biased_causal_attention(q, k, v, bias_fn, pos, max_elements=B * H * L * 7)  # 7-query chunks
    assert torch.allclose(whole, naive, atol=1e-5)
    assert torch.allclose(chunked, naive, atol=1e-5)


def test_unknown_encoding_parameter_is_a_clear_error():
    from posbench.core.errors import PosbenchError

    with pytest.raises(PosbenchError, match="has no parameter 'bsae'.*valid: base"):
        build_encoding("rope", ModelShape(32, 4, 1, 16), {"bsae": 1.0})
    with pytest.raises(PosbenchError, match="unknown encoding 'ropee'; valid: "):
        build_encoding("ropee", ModelShape(32, 4, 1, 16))


def test_every_encoding_yaml_names_a_registered_encoding_with_its_params():
    """A yaml is optional (encoding=<name> works without one, with the Params' defaults); where there
    is one, it is that encoding's, and it lists every parameter (its run ids stay what they were)."""
    import dataclasses
    from pathlib import Path

    import yaml

    from posbench.cli.config import CONF_DIR

    for path in (Path(CONF_DIR) / "encoding").glob("*.yaml"):
        y = yaml.safe_load(path.read_text())
        assert y["name"] == path.stem and y["name"] in ENCODINGS.builtins(), path
        fields = {f.name for f in dataclasses.fields(ENCODINGS.get(y["name"]).Params)}
        assert set(y) - {"name"} == fields, path


TRANSLATION_INVARIANT = sorted(n for n, cls in ENCODINGS.items() if cls.translation_invariant)


def test_the_relative_methods_promise_translation_invariance():
    assert set(TRANSLATION_INVARIANT) >= {"rope", "xpos", "alibi", "t5", "kerple_log", "kerple_power", "sandwich", "shaw", "transformer_xl"}


@pytest.mark.parametrize("name", TRANSLATION_INVARIANT)
def test_shifting_all_positions_changes_nothing(name):
    model = tiny_model(name, train_len=64)
    with torch.no_grad():
        for p in model.encoding.parameters():  # move learned parameters off their init too
            p.add_(torch.randn_like(p) * 0.1)
    x = torch.randint(0, 256, (2, 24))
    with torch.no_grad():
        a = model(x, torch.arange(24))
        b = model(x, torch.arange(24) + 37)
    assert torch.allclose(a, b, atol=1e-4)


@pytest.mark.parametrize("name", ["sinusoidal", "learned"])
def test_absolute_methods_do_see_the_shift(name):
    model = tiny_model(name, train_len=64)
    x = torch.randint(0, 256, (2, 24))
    with torch.no_grad():
        assert not torch.allclose(model(x, torch.arange(24)), model(x, torch.arange(24) + 37), atol=1e-4)


def test_t5_buckets_known_values():
    from posbench.encodings.t5 import relative_position_bucket as bucket

    rel = torch.tensor([0, -1, -15, -16, -20, -32, -64, -127, -128, -1000, 5])
    assert bucket(rel, causal=True).tolist() == [0, 1, 15, 16, 17, 21, 26, 31, 31, 31, 0]
    rel = torch.tensor([0, -3, 3, -8, -16, 16, -128, 200])
    assert bucket(rel, causal=False).tolist() == [0, 3, 19, 8, 10, 26, 15, 31]


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


@pytest.mark.parametrize("name", ["kerple_log", "kerple_power", "alibi", "sandwich"])
def test_distance_biases_are_zero_on_the_diagonal_and_decrease(name):
    enc = build_encoding(name, ModelShape(32, 4, 2, 16))
    b = enc.bias(torch.tensor([40]), torch.arange(40, 30, -1), 1)[:, 0]  # [H, distances 0..9]
    assert torch.allclose(b[:, 0], torch.zeros(4), atol=1e-5)
    assert torch.all(b[:, 1:] < b[:, :-1])


def test_kerple_power_has_finite_gradients_at_distance_zero():
    enc = build_encoding("kerple_power", ModelShape(32, 4, 2, 16))
    enc.bias(torch.arange(8), torch.arange(8), 0).sum().backward()
    assert torch.isfinite(enc.r1.grad).all() and torch.isfinite(enc.r2.grad).all()


def naive_relative_attention(q, k, v, dist_index, rel_q, rel_k, rel_v):
    """The formula with the full L x L x Dh tensors, for comparison."""
    L, D = q.shape[-2], q.shape[-1]
    rk = rel_k[:, dist_index] if rel_k.dim() == 3 else rel_k[dist_index]  # [H?, L, L, D]
    scores = q @ k.transpose(-1, -2) + (rel_q[..., :, None, :] * rk).sum(-1)
    scores = (scores / math.sqrt(D)).masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    a = scores.softmax(-1)
    out = a @ v
    if rel_v is not None:
        out = out + (a[..., None] * rel_v[dist_index]).sum(-2)
    return out


def test_shaw_matches_the_naive_formula():
    torch.manual_seed(0)
    from posbench.attention.kernels import relative_causal_attention

    B, H, L, D, K = 2, 3, 30, 8, 5
    q, k, v = (torch.randn(B, H, L, D, dtype=torch.float64) for _ in range(3))
    rel_k, rel_v = torch.randn(K + 1, D, dtype=torch.float64), torch.randn(K + 1, D, dtype=torch.float64)
    pos = torch.arange(L)
    dist = (pos[:, None] - pos[None, :]).clamp(0, K)
    expected = naive_relative_attention(q, k, v, dist, q, rel_k, rel_v)
    got = relative_causal_attention(q, k, v, pos, q, rel_k[None], rel_v, max_elements=B * H * L * 4)
    assert torch.allclose(got, expected, atol=1e-10)


def test_transformer_xl_matches_the_paper_formula():
    """A_ij = q.k + q.W_R R_{i-j} + u.k + v.W_R R_{i-j}, computed term by term."""
    torch.manual_seed(0)
    shape = ModelShape(16, 2, 1, 12)
    enc = build_encoding("transformer_xl", shape).double()
    with torch.no_grad():
        enc.u.normal_()
        enc.v.normal_()
    B, H, L, D = 1, 2, 12, 8
    q, k, v = (torch.randn(B, H, L, D, dtype=torch.float64) for _ in range(3))
    pos = torch.arange(L)
    got = enc.relative_attention(q, k, v, pos, 0, AttentionOptions())
    R = enc.w_r[0](sinusoidal_table(L, 16).double()).view(L, H, D).transpose(0, 1)  # [H, dist, D]
    dist = pos[:, None] - pos[None, :]
    A = torch.zeros(B, H, L, L, dtype=torch.float64)
    for i in range(L):
        for j in range(i + 1):
            r = R[:, dist[i, j]]
            A[0, :, i, j] = (q[0, :, i] * k[0, :, j]).sum(-1) + (q[0, :, i] * r).sum(-1) + (enc.u * k[0, :, j]).sum(-1) + (enc.v * r).sum(-1)
    A = (A / math.sqrt(D)).masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    assert torch.allclose(got, A.softmax(-1) @ v, atol=1e-10)


def test_fire_bias_is_normalised_by_the_query_position():
    enc = build_encoding("fire", ModelShape(32, 4, 2, 16))
    b = enc.bias(torch.arange(100), torch.arange(100), 0)
    assert b.shape == (4, 100, 100) and torch.isfinite(b).all()
    # psi(i-j)/psi(max(L,i)) is 1 for j = 0 at every query past L: the same bias there
    assert torch.allclose(b[:, 50, 0], b[:, 90, 0], atol=1e-6)


def test_conv_is_causal_even_with_a_wide_kernel():
    torch.manual_seed(0)
    model = build_model(TINY, "conv", {"kernel_size": 7}, 32).eval()
    x = torch.randint(0, 256, (1, 32))
    y = x.clone()
    y[0, 10] += 1
    with torch.no_grad():
        assert torch.allclose(model(x)[:, :10], model(y)[:, :10], atol=1e-6)


def test_randomized_positions_are_sorted_distinct_and_reproducible():
    from posbench.attention.positions import sample_positions as random_positions

    a, b = random_positions(1024, 64, 0, 5), random_positions(1024, 64, 0, 5)
    assert a.equal(b) and a.shape == (64,) and bool((a[1:] > a[:-1]).all()) and int(a.max()) < 1024
    assert not a.equal(random_positions(1024, 64, 0, 6))


@pytest.mark.parametrize("train_len", [16, 128, 4096])
def test_fire_parameters_start_where_asked_with_finite_gradients(train_len):
    enc = build_encoding("fire", ModelShape(32, 4, 2, train_len))
    layer = enc.layers[0]
    assert layer.threshold().item() == pytest.approx(train_len / 4)  # the paper: 512 at 2048
    assert layer.c.item() == pytest.approx(0.1) and layer.L_multiplier.item() == 1.0
    enc.bias(torch.arange(200), torch.arange(200), 0).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters())
    assert layer.L_multiplier.grad.abs().item() > 0  # the threshold learns
