"""The local-window rows (posbench/evaluation/variants/local.py): their names, every encoding gets
them, and the window hides far keys in the kernels that compute their own attention."""

import pytest
import torch

from posbench.attention.kernels import Window
from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, build_encoding
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import make_variant, rows
from posbench.model.transformer import ModelConfig, build_model


def test_local_window_rows_name_themselves_and_apply_to_every_encoding():
    from posbench.encodings import available

    v = make_variant("local", {"size": 32})
    assert v.suffix() == "+swa32" and make_variant("local", {"kind": "chunked"}).suffix() == "+chunkL"
    assert v.options(AttentionOptions(), 128, 64).window == Window("sliding", 32)
    # the far-context control exists for every kernel, the relative ones and stick-breaking included
    assert all(v.applies_to(build_encoding(name, ModelShape(32, 4, 2, 16))) for name in available())
    with pytest.raises(PosbenchError, match="kind must be one of"):
        make_variant("local", {"kind": "banded"})
    assert make_variant("floorlog").suffix() == "+floorlog" and make_variant("logn").suffix() == "+logn"


@pytest.mark.parametrize("name", ["shaw", "transformer_xl", "stickbreaking"])
def test_an_evaluation_window_hides_far_keys_in_the_kernels_that_compute_their_own_attention(name):
    """The +swa row on Shaw, Transformer-XL and stick-breaking: with a window of W keys in every
    layer of an n-layer model, the output at position i cannot depend on tokens more than n (W - 1)
    back; without the window it does; a window as long as the sequence changes nothing."""
    torch.manual_seed(0)
    cfg = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=2, mlp_ratio=2)
    model = build_model(cfg, name, {}, 16).eval()
    x = torch.randint(0, 256, (1, 40))
    y = x.clone()
    y[0, :10] = (y[0, :10] + 1) % 256  # change only tokens 0..9
    windowed = AttentionOptions(window=Window("sliding", 8))
    with torch.no_grad():
        far = slice(10 + 2 * 7, 40)  # positions whose 2-layer receptive field (2 x 7 back) misses 0..9
        torch.testing.assert_close(model(x, None, windowed)[0, far], model(y, None, windowed)[0, far])
        assert not torch.allclose(model(x)[0, far], model(y)[0, far])
        torch.testing.assert_close(model(x, None, AttentionOptions(window=Window("sliding", 40))), model(x))


@pytest.mark.parametrize("name", ["nope", "alibi", "rope"])
def test_a_chunked_window_is_the_1x_condition_and_a_sliding_one_is_not(name):
    """Why the far-context control is a sliding window (and a recurrent layer's control reads at least
    W tokens, posbench/mixers/state.py): under chunks of W every chunk scores as W tokens alone, so a
    chunked "control" at 16x is the 1x condition, not a window of W keys; its gain over 1x is nil by
    construction. A sliding window of W gives the tokens after a chunk border their W keys."""
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=32, n_layers=2, n_heads=2, mlp_ratio=2), name, {}, 16).eval()
    x = torch.randint(0, 256, (2, 64))
    chunked, sliding = (AttentionOptions(window=Window(kind, 16)) for kind in ("chunked", "sliding"))
    with torch.no_grad():
        blocks = model(x, None, chunked)
        one_x = torch.cat([model(x[:, s: s + 16]) for s in range(0, 64, 16)], 1)
        torch.testing.assert_close(blocks, one_x, atol=1e-5, rtol=1e-5)
        assert not torch.allclose(model(x, None, sliding)[:, 16:20], one_x[:, 16:20], atol=1e-3)


def test_the_local_window_is_a_control_of_train_len_keys_by_default():
    from posbench.evaluation.variants.local import LocalWindow

    v = make_variant("local")
    assert isinstance(v, LocalWindow) and v.window  # its rows are listed apart from the unwindowed ones
    assert v.suffix() == "+swaL" and v.options(AttentionOptions(), 256, 64).window == Window("sliding", 64)
    assert make_variant("local", {"kind": "chunked", "size": 8}).options(AttentionOptions(), 256, 64).window == Window("chunked", 8)


def test_a_temperature_row_gets_its_own_window_control():
    """``+logn`` and ``+floorlog`` rows are verdict rows too: each gets the same temperature under the
    window (``alibi+floorlog+swaL``), its far-context control; a model without a row temperature
    (iRoPE: every layer has its own) gets none, and windowed rows are not windowed twice."""
    cfg = EvalConfig(variants=["logn", "floorlog", "local"], bca=[])
    shape = ModelShape(32, 4, 2, 16)
    names = [r.name for r in rows(build_encoding("alibi", shape), cfg)]
    assert names == ["alibi", "alibi+logn", "alibi+floorlog", "alibi+swaL", "alibi+logn+swaL", "alibi+floorlog+swaL"]
    assert [r.name for r in rows(build_encoding("irope", shape), cfg)] == ["irope", "irope+swaL"]
    composed = next(r for r in rows(build_encoding("alibi", shape), cfg) if r.name == "alibi+floorlog+swaL")
    opts = composed.options(AttentionOptions(), 256, 64)
    assert opts.window == Window("sliding", 64) and opts.query_scale is not None


def test_the_sink_and_window_rows_name_their_sinks_and_refuse_sinks_not_below_the_window():
    v = make_variant("local", {"sinks": 4})
    assert v.suffix() == "+swaL+sink4" and v.window
    assert v.options(AttentionOptions(), 256, 64).window == Window("sliding", 64, 4)
    assert v.record()["sinks"] == 4 and "sinks" not in make_variant("local").record()  # old records unchanged
    with pytest.raises(PosbenchError, match="sinks must be below the window's size=8"):
        make_variant("local", {"size": 8, "sinks": 8})
    with pytest.raises(PosbenchError, match=r"size=4 \(train_len\), got sinks=4"):
        v.options(AttentionOptions(), 64, 4)


@pytest.mark.parametrize("name", ["alibi", "rope", "ssmax", "fox"])
def test_a_sink_and_window_row_reads_the_first_tokens_and_nothing_else_past_its_window(name):
    """Under a window of W keys and k sinks in both layers, the output far from the start depends on
    tokens 0..k-1 (the sinks) but not on the tokens between them and the window's reach."""
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=32, n_layers=2, n_heads=2, mlp_ratio=2), name, {}, 16).eval()
    x = torch.randint(0, 256, (1, 48))
    opts = AttentionOptions(window=Window("sliding", 8, 2))
    middle, first = x.clone(), x.clone()
    middle[0, 4:12] = (middle[0, 4:12] + 1) % 256  # neither sinks nor within 2 x 7 of the far positions
    first[0, 0] = (first[0, 0] + 1) % 256  # a sink
    far = slice(12 + 2 * 7, 48)
    with torch.no_grad():
        out = model(x, None, opts)[0, far]
        torch.testing.assert_close(model(middle, None, opts)[0, far], out)
        assert not torch.allclose(model(first, None, opts)[0, far], out)
        assert not torch.allclose(model(x, None, AttentionOptions(window=Window("sliding", 8)))[0, far], out)


def test_a_recurrent_layer_refuses_sinks_in_one_line():
    from posbench.mixers.state import mix

    mixer = type("Recurrent", (torch.nn.Module,), {"forward": lambda self, x: x})()
    mixer.carry = None
    mixer.eval()
    with pytest.raises(PosbenchError, match="no form for a recurrent layer"):
        mix(mixer, torch.zeros(1, 8, 4), Window("sliding", 4, 1))
