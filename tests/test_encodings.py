"""Behaviour every encoding must have, and the known values of the published formulas."""

import math

import pytest
import torch

from posbench.attention import biased_causal_attention
from posbench.encodings import REGISTRY, ModelShape, available, build_encoding
from posbench.encodings.alibi import alibi_slopes
from posbench.encodings.rope import rope_frequencies
from posbench.encodings.sinusoidal import sinusoidal_table
from posbench.model import ModelConfig, build_model

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
    enc = build_encoding(name, ModelShape(32, 4, 2, 16))
    hooks = [enc.uses_input, enc.uses_rotation, enc.uses_bias, enc.uses_relative]
    assert name == "nope" or any(hooks), f"{name} declares no hook"


def test_rope_scores_depend_only_on_offset():
    enc = build_encoding("rope", ModelShape(64, 2, 1, 16))
    q, k = torch.randn(1, 2, 1, 32, dtype=torch.float64), torch.randn(1, 2, 1, 32, dtype=torch.float64)

    def score(m, n):
        cos_q, sin_q = enc.prepare(torch.tensor([m]))
        cos_k, sin_k = enc.prepare(torch.tensor([n]))
        qr, _ = enc.rotate(q, q, (cos_q.double(), sin_q.double()))
        kr, _ = enc.rotate(k, k, (cos_k.double(), sin_k.double()))
        return (qr * kr).sum(-1)

    assert torch.allclose(score(5, 2), score(105, 102), atol=1e-9)
    assert torch.allclose(score(1000, 990), score(10, 0), atol=1e-9)
    assert not torch.allclose(score(5, 2), score(5, 3), atol=1e-6)


def test_rope_frequencies_known_values():
    f = rope_frequencies(8, base=10000.0)
    assert torch.allclose(f, torch.tensor([1.0, 0.1, 0.01, 0.001], dtype=torch.float64))
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
    h = torch.arange(4)[:, None]
    d = torch.arange(10)[None, :]
    b = enc.bias(h, d + 5, torch.full_like(d, 5) + 0, 0)  # distances 0..9
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
    bias_fn = lambda h, i, j: -slopes[h] * (i - j)  # noqa: E731
    pos = torch.arange(L)
    scores = q @ k.transpose(-1, -2) / math.sqrt(D) + bias_fn(torch.arange(H)[:, None, None], pos[:, None], pos[None, :])
    scores = scores.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    naive = scores.softmax(-1) @ v
    whole = biased_causal_attention(q, k, v, bias_fn, pos)
    chunked = biased_causal_attention(q, k, v, bias_fn, pos, max_elements=B * H * L * 7)  # 7-query chunks
    assert torch.allclose(whole, naive, atol=1e-5)
    assert torch.allclose(chunked, naive, atol=1e-5)


def test_unknown_encoding_parameter_is_a_clear_error():
    from posbench.errors import PosbenchError

    with pytest.raises(PosbenchError, match="has no parameter 'bsae'.*valid: base"):
        build_encoding("rope", ModelShape(32, 4, 1, 16), {"bsae": 1.0})
    with pytest.raises(PosbenchError, match="unknown encoding 'ropee'; valid: "):
        build_encoding("ropee", ModelShape(32, 4, 1, 16))


def test_every_registered_encoding_has_a_yaml():
    from pathlib import Path

    from posbench.config import CONF_DIR

    yamls = {p.stem for p in (Path(CONF_DIR) / "encoding").glob("*.yaml")}
    assert set(REGISTRY) <= yamls
