"""Layer patterns (posbench/encodings/layers.py): patterns repeat, a windowed layer is the full formula
with the window mask, a pattern is undefined where a part is, and a window not below train_len is
refused."""

import math

import pytest
import torch

from posbench.attention.kernels import Window
from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, build_encoding
from tests.helpers import attn_output, hf_visible, layer_inputs, model_of, naive

X = torch.Generator().manual_seed(1)


def test_layer_patterns_repeat_and_shorter_models_keep_the_global_layer():
    irope = build_encoding("irope", ModelShape(32, 4, 8, 64))
    kinds = [(v.part.name if hasattr(v, "part") else v.name, v.window(i)) for i, v in enumerate(irope.at(i) for i in range(8))]
    assert kinds[:4] == [("rope", Window("chunked", 16))] * 3 + [("nope", None)]
    assert kinds[4:] == kinds[:4]
    two = build_encoding("irope", ModelShape(32, 4, 2, 64))
    assert [two.at(i).name for i in range(2)] == ["rope", "nope"]
    enc = build_encoding("layers", ModelShape(32, 4, 3, 64), {"pattern": ["alibi/swa8", "rope/chunk", "nope"], "window": 32})
    assert [(enc.at(i).name, enc.at(i).window(i)) for i in range(3)] == [
        ("alibi", Window("sliding", 8)), ("rope", Window("chunked", 32)), ("nope", None)]
    assert enc.at(0).uses_bias and enc.at(1).uses_rotation  # a view is its part, with its window
    for bad, match in [(["rope/swb"], "is not <encoding>"), (["sinusoidal"], "input encoding"),
                       (["shaw/swa"], "takes no window"), (["irope"], "cannot hold another pattern"), ([], "empty")]:
        with pytest.raises(PosbenchError, match=match):
            build_encoding("layers", ModelShape(32, 4, 3, 64), {"pattern": bad})
    with pytest.raises(PosbenchError, match="names 'alibi', which is not in the pattern"):
        build_encoding("layers", ModelShape(32, 4, 3, 64), {"pattern": ["rope"], "params": {"alibi": {}}})
    rope = build_encoding("layers", ModelShape(32, 4, 3, 64), {"pattern": ["rope"], "params": {"rope": {"base": 500.0}}})
    assert rope.at(0).params.base == 500.0


@pytest.mark.parametrize("pattern", [["rope/swa6"], ["alibi/chunk8"], ["nope/swa4", "rope"]])
def test_a_windowed_layer_is_the_full_formula_with_the_window_mask(pattern):
    """Layer 0 of a pattern against the formula with the whole L x L matrix and HF's mask."""
    model = model_of("layers", {"pattern": pattern})
    x = torch.randint(0, 256, (2, 40), generator=X)
    a, q, k, v = layer_inputs(model, x)
    enc, pos = model.encoding.at(0), torch.arange(40)
    if enc.uses_rotation:
        q, k = enc.rotate(q, k, enc.prepare(pos, AttentionOptions()))
    scores = q @ k.transpose(-1, -2) / math.sqrt(8)
    if enc.uses_bias:
        scores = scores + enc.bias(pos, pos, 0)
    w = enc.window(0)
    y = naive(scores, v, hf_visible(w.kind, w.size, 40))
    want = model.blocks[0].attn.proj(y.transpose(1, 2).reshape(2, 40, 32))
    torch.testing.assert_close(attn_output(model, x), want, rtol=1e-9, atol=1e-9)


def test_a_pattern_is_undefined_where_a_part_is(monkeypatch):
    """A layer pattern cannot score a length one of its parts cannot: the reason is the part's."""
    from posbench.encodings.nope import NoPE

    monkeypatch.setattr(NoPE, "undefined_reason", lambda self, length: "too long for nope" if length > 32 else None)
    enc = build_encoding("rnope_swa", ModelShape(32, 4, 4, 16))
    assert enc.undefined_reason(32) is None and enc.undefined_reason(64) == "too long for nope"


@pytest.mark.parametrize("encoding, params, entry", [
    ("layers", {"pattern": ["rope/swa64", "nope"]}, "rope/swa64"),
    ("irope", {"window": 64}, "rope/chunk (encoding.window=64)"),
    ("rnope_swa", {"window": 100}, "rope/swa (encoding.window=100)"),
])
def test_a_window_not_below_train_len_is_refused(encoding, params, entry):
    """It would mask nothing in training: a plain model under a windowed name."""
    from posbench.core.errors import PosbenchError

    with pytest.raises(PosbenchError) as e:
        build_encoding(encoding, ModelShape(32, 4, 4, 64), params)
    assert str(e.value) == (f"{encoding}: the window of {entry} is {params.get('window', 64)} keys, not below train_len=64, "
                            "so it would train as full attention; give a window below 64 (encoding.window, or /swaN, "
                            "/chunkN in encoding.pattern)")
    build_encoding(encoding, ModelShape(32, 4, 4, 65), {**params, "window": 64} if "window" in params else params)


def test_a_pattern_entry_names_an_encoding_and_an_optional_window():
    from posbench.encodings.layers import Layers, LayerView, parse_entry

    assert parse_entry("rope/swa16", 8) == ("rope", Window("sliding", 16))
    assert parse_entry("alibi/chunk", 8) == ("alibi", Window("chunked", 8))  # no size: encoding.window
    assert parse_entry(" nope ", 8) == ("nope", None)
    with pytest.raises(PosbenchError, match="is not <encoding>"):
        parse_entry("rope/window4", 8)
    enc = build_encoding("layers", ModelShape(32, 4, 2, 64), {"pattern": ["rope/swa8", "rope"]})
    assert isinstance(enc, Layers) and isinstance(enc.at(0), LayerView) and enc.at(1) is enc.parts["rope"]
    assert enc.at(0).part is enc.parts["rope"]  # one RoPE, shared: a view adds only the window
