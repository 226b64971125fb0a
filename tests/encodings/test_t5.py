"""T5's relative buckets (posbench/encodings/t5.py): known values, and every bucket used in evaluation
is trained; its logits are HF T5Attention's (bias_scale=none, the default), x-transformers' table x
sqrt(d_head) is reachable (bias_scale=sqrt_dhead), and the default is the bias T5 runs always had."""

import math

import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, build_encoding
from posbench.encodings.t5 import relative_position_bucket
from tests.helpers import CFG, attn_output, layer_inputs, model_of


def test_t5_every_bucket_used_in_evaluation_is_trained():
    from posbench.core.errors import PosbenchError
    from posbench.encodings.t5 import relative_position_bucket

    for train_len in (16, 64, 128):
        enc = build_encoding("t5", ModelShape(32, 4, 2, train_len))
        trained = set(relative_position_bucket(-torch.arange(train_len), True, enc.num_buckets, enc.max_distance).tolist())
        evaluated = set(relative_position_bucket(-torch.arange(16 * train_len), True, enc.num_buckets, enc.max_distance).tolist())
        assert evaluated <= trained == set(range(enc.num_buckets))
    with pytest.raises(PosbenchError, match="reach only buckets 0..26 of 32"):
        build_encoding("t5", ModelShape(32, 4, 2, 64), {"max_distance": 128})


def test_t5_buckets_known_values():
    from posbench.encodings.t5 import relative_position_bucket as bucket

    rel = torch.tensor([0, -1, -15, -16, -20, -32, -64, -127, -128, -1000, 5])
    assert bucket(rel, causal=True).tolist() == [0, 1, 15, 16, 17, 21, 26, 31, 31, 31, 0]
    rel = torch.tensor([0, -3, 3, -8, -16, 16, -128, 200])
    assert bucket(rel, causal=False).tolist() == [0, 3, 19, 8, 10, 26, 15, 31]


@pytest.mark.parametrize("bias_scale", ["none", "sqrt_dhead"])
def test_t5_attention_is_hf_t5attention(bias_scale):
    """T5's logits q'.k + b (no 1/sqrt(d): HF T5Attention.scaling = 1.0, the scale folded into q's
    initialisation) with q' = q / sqrt(d_head) are posbench's q.k / sqrt(d_head) + b: HF's layer
    with posbench's weights gives the same output, with the table as is for ``none`` and the
    table x sqrt(d_head) (x-transformers) for ``sqrt_dhead``."""
    pytest.importorskip("transformers")
    from transformers.models.t5.modeling_t5 import T5Attention, T5Config

    model = model_of("t5", {"bias_scale": bias_scale})
    enc, attn, dh = model.encoding, model.blocks[0].attn, CFG.d_model // CFG.n_heads
    hf = T5Attention(T5Config(d_model=CFG.d_model, d_kv=dh, num_heads=CFG.n_heads, is_decoder=True, dropout_rate=0.0,
                              relative_attention_num_buckets=enc.num_buckets,
                              relative_attention_max_distance=enc.max_distance),
                     has_relative_attention_bias=True, layer_idx=0).double().eval()
    wq, wk, wv = attn.qkv.weight.chunk(3)  # qkv's rows: [q | k | v], each [heads x d_head]
    with torch.no_grad():
        hf.q.weight.copy_(wq / math.sqrt(dh))  # T5's q' (what its initialisation scales)
        hf.k.weight.copy_(wk), hf.v.weight.copy_(wv), hf.o.weight.copy_(attn.proj.weight)
        hf.relative_attention_bias.weight.copy_(enc.table.weight * (math.sqrt(dh) if bias_scale == "sqrt_dhead" else 1))
    x = torch.randint(0, 256, (2, 16))
    a, *_ = layer_inputs(model, x)
    causal = torch.full((16, 16), torch.finfo(torch.float64).min, dtype=torch.float64).triu(1)[None, None]
    with torch.no_grad():
        theirs = hf(a, mask=causal)[0]
        assert torch.allclose(attn_output(model, x), theirs, atol=1e-10)


def test_t5_default_is_the_unscaled_bias_of_every_earlier_t5_run():
    """The default (``none``) is the bias posbench always computed, bit for bit: the table read at
    each pair's bucket; ``sqrt_dhead`` is that times sqrt(d_head)."""
    shape = ModelShape(32, 4, 2, 16)
    default = build_encoding("t5", shape)
    torch.manual_seed(0)
    old = build_encoding("t5", shape, {"bias_scale": "none"})
    torch.manual_seed(0)
    scaled = build_encoding("t5", shape, {"bias_scale": "sqrt_dhead"})
    pos = torch.arange(64)
    bucket = relative_position_bucket(pos[None, :] - pos[:, None], True, old.num_buckets, old.max_distance)
    assert torch.equal(old.bias(pos, pos, 0), old.table(bucket).permute(2, 0, 1))  # the code before bias_scale
    assert default.scale is None and old.scale is None
    assert torch.equal(scaled.bias(pos, pos, 0), old.bias(pos, pos, 0) * math.sqrt(8))
    with pytest.raises(PosbenchError, match=r"^encoding.bias_scale of 't5' must be one of none, sqrt_dhead, got 'sqrt'$"):
        build_encoding("t5", shape, {"bias_scale": "sqrt"})


def test_t5_scaled_bias_is_causal():
    model = model_of("t5", {"bias_scale": "sqrt_dhead"})
    x = torch.randint(0, 256, (2, 24))
    y = x.clone()
    y[:, 12] = (y[:, 12] + 1) % 256
    with torch.no_grad():
        a, b = model(x), model(y)
    assert torch.equal(a[:, :12], b[:, :12]) and not torch.allclose(a[:, 12:], b[:, 12:])
