"""iRoPE (posbench/encodings/irope.py): Llama 4's floor-log temperature on the global layers, and
chunked layers that never see an earlier chunk."""

import math

import pytest
import torch

from posbench.encodings import ModelShape, build_encoding
from tests.helpers import attn_output, hf_visible, layer_inputs, model_of, naive

X = torch.Generator().manual_seed(1)


def test_irope_global_layers_use_llama4s_floor_log_temperature():
    """HF Llama4TextAttention: NoPE layers scale the queries by log1p(floor((pos + 1) / floor_scale))
    * attn_scale + 1; RoPE layers do not (chunked attention instead)."""
    train_len = 64
    model = model_of("irope", train_len=train_len)
    pos = torch.arange(200)
    nope, rope = model.encoding.at(3), model.encoding.at(0)
    scale = nope.query_scale(pos, pos + 1, 3)
    hf = torch.log1p(torch.floor((pos.float() + 1.0) / 16)) * 0.1 + 1.0  # floor_scale = chunk = train_len / 4
    torch.testing.assert_close(scale, hf)
    assert scale[14] == 1 and scale[15] > 1 and rope.query_scale(pos, pos + 1, 0) is None
    # the layer's output: plain causal NoPE attention of the scaled queries
    x = torch.randint(0, 256, (1, 80), generator=X)
    a, q, k, v = layer_inputs(model, x, layer=3)
    q = q * hf[:80, None].double()
    y = naive(q @ k.transpose(-1, -2) / math.sqrt(8), v, hf_visible(None, None, 80))
    torch.testing.assert_close(attn_output(model, x, 3), model.blocks[3].attn.proj(y.transpose(1, 2).reshape(1, 80, 32)))


def test_chunked_layers_never_see_an_earlier_chunk():
    model = model_of("irope", train_len=64)  # chunks of 16
    x = torch.randint(0, 256, (1, 64), generator=X)
    y = x.clone()
    y[0, :32] = (y[0, :32] + 7) % 256  # the first two chunks change
    a, b = attn_output(model, x, 0), attn_output(model, y, 0)
    torch.testing.assert_close(a[:, 32:], b[:, 32:])
    assert not torch.allclose(a[:, :32], b[:, :32])


def test_irope_s_temperature_follows_its_floor_scale_and_beta_zero_turns_it_off():
    from posbench.attention.kernels import Window
    from posbench.encodings.irope import IRoPE

    pos = torch.arange(200)
    off = build_encoding("irope", ModelShape(32, 4, 4, 64), {"beta": 0.0})
    assert isinstance(off, IRoPE) and off.at(0).window(0) == Window("chunked", 16)
    assert torch.all(off.at(3).query_scale(pos, pos + 1, 3) == 1)
    wide = build_encoding("irope", ModelShape(32, 4, 4, 64), {"floor_scale": 32}).at(3).query_scale(pos, pos + 1, 3)
    assert wide[30] == 1 and wide[31] == pytest.approx(1 + 0.1 * math.log(2))  # floor((31 + 1) / 32) = 1
