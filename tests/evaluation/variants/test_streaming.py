"""StreamingLLM (``rope+streaming``): one parallel pass equals the reference's token-by-token decoding
with a start + recent KV cache and positions shifted into the cache (mit-han-lab/streaming-llm
kv_cache.py, pos_shift/modify_llama.py); nothing changes before the first eviction; its rows are
windowed controls and exist for RoPE models only."""

import math

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import plain_frequencies
from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, build_encoding
from posbench.encodings.rope import apply_rotation, rotation_tables
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import make_variant, rows
from posbench.model.transformer import ModelConfig, build_model
from posbench.report.records.load import is_windowed


def rotate(x, pos, inv):
    cos, sin = rotation_tables(pos, inv)
    return apply_rotation(x, cos, sin)


def cache_loop(q, k, v, inv, start_size, recent_size, scale, sink=None, ssmax=None):
    """The reference, literally: decode token by token; before token i the cache holds the keys it
    kept (StartRecentKVCache trims it to start_size + recent_size after every step), stored unrotated;
    keys are rotated at their index in the cache, the query at the cache's next index. ``sink`` [H]: a
    gpt-oss sink logit in the denominator; ``ssmax`` [H]: SSMax's s, the query times s ln n with n the
    keys in the cache."""
    out = []
    kept: list[int] = []
    for i in range(q.shape[-2]):
        kept = kept + [i]  # the current token joins the cache
        cache_pos = torch.arange(len(kept))
        keys = rotate(k[:, :, kept], cache_pos, inv)
        query = rotate(q[:, :, i:i + 1], cache_pos[-1:], inv)
        if ssmax is not None:
            query = query * (ssmax * math.log(len(kept)))[:, None, None]
        logits = (query @ keys.transpose(-1, -2)) * scale
        if sink is not None:
            logits = torch.cat((logits, sink.view(1, -1, 1, 1).expand(*logits.shape[:3], 1)), dim=-1)
        p = logits.softmax(-1)[..., :len(kept)]
        out.append(p @ v[:, :, kept])
        if len(kept) > start_size + recent_size:  # evict the middle
            kept = kept[:start_size] + kept[len(kept) - recent_size:]
    return torch.cat(out, dim=2)


@pytest.mark.parametrize("params,train_len", [({}, 16), ({"sinks": 1, "recent": 5}, 16), ({"sinks": 0, "recent": 7}, 16)])
def test_one_pass_equals_decoding_with_the_start_recent_cache(params, train_len):
    torch.manual_seed(0)
    L = 70
    q, k, v = (torch.randn(2, 2, L, 32) for _ in range(3))
    enc = build_encoding("rope", ModelShape(64, 2, 1, train_len))
    variant = make_variant("streaming", params)
    sinks, recent = variant.cache(train_len)
    assert (sinks, recent) == (params.get("sinks", 4), params.get("recent", train_len - 4 - 1))
    ref = cache_loop(q, k, v, plain_frequencies(32, 10000.0), sinks, recent, 32 ** -0.5)
    got = variant.attend(q, k, v, enc, torch.arange(L), AttentionOptions(), train_len=train_len)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("encoding", ["sink", "ssmax"])
def test_a_sink_logit_and_ssmax_s_temperature_ride_along_as_in_the_cache(encoding):
    """StreamingLLM on a model whose softmax has its own terms: the gpt-oss sink logit joins every query's
    denominator, SSMax's n is the number of keys in the cache (train_len once it is full, not i + 1)."""
    torch.manual_seed(0)
    L, train_len = 70, 16
    q, k, v = (torch.randn(2, 2, L, 32) for _ in range(3))
    enc = build_encoding(encoding, ModelShape(64, 2, 2, train_len))
    with torch.no_grad():
        if encoding == "sink":
            enc.sinks.copy_(torch.tensor([[1.5, -0.5], [0.0, 2.0]]))
        else:
            enc.s.copy_(torch.tensor([[0.3, 0.6], [0.4, 0.5]]))
    variant = make_variant("streaming")
    extra = {"sink": enc.sinks[1]} if encoding == "sink" else {"ssmax": enc.s[1]}
    ref = cache_loop(q, k, v, plain_frequencies(32, 10000.0), *variant.cache(train_len), 32 ** -0.5, **extra)
    with torch.no_grad():
        got = variant.attend(q, k, v, enc, torch.arange(L), AttentionOptions(), train_len=train_len, layer=1)
        plain = variant.attend(q, k, v, build_encoding("rope", ModelShape(64, 2, 2, train_len)), torch.arange(L),
                               AttentionOptions(), train_len=train_len)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(got, plain, atol=1e-3)  # the terms change the attention: they were not dropped


@pytest.mark.parametrize("encoding", ["rope", "sink", "ssmax"])
def test_no_eviction_within_the_cache_so_plain_rope_there_and_causal_beyond(encoding):
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="tiny", d_model=64, n_layers=2, n_heads=2), encoding, {}, 16).eval()
    with torch.no_grad():  # terms far from their initial values, so that dropping one would show
        for name, p in model.encoding.named_parameters():
            p.copy_(torch.rand_like(p) + 0.5)
    x = torch.randint(0, 256, (2, 48))
    opts = make_variant("streaming").options(AttentionOptions(), 48, 16)
    with torch.no_grad():
        plain, streamed = model(x), model(x, None, opts)
        torch.testing.assert_close(streamed[:, :16], plain[:, :16], rtol=1e-4, atol=1e-5)  # 16 keys: nothing evicted
        assert not torch.allclose(streamed[:, 20:], plain[:, 20:], atol=1e-3)  # the middle is gone
        y = x.clone()
        y[:, 30:] = torch.randint(0, 256, (2, 18))
        torch.testing.assert_close(model(y, None, opts)[:, :30], streamed[:, :30])


def test_rows_for_rope_only_windowed_and_named_by_their_settings():
    ev = EvalConfig(multiples=[1, 4], variants=["streaming", {"name": "streaming", "sinks": 1, "recent": 30}])
    rope = build_encoding("rope", ModelShape(64, 2, 2, 16))
    assert [r.name for r in rows(rope, ev)] == ["rope", "rope+streaming", "rope+streamings1r30"]
    assert [r.name for r in rows(build_encoding("alibi", ModelShape(64, 2, 2, 16)), ev)] == ["alibi"]
    assert is_windowed({"variants": [{"variant": "streaming"}]})
    with pytest.raises(PosbenchError, match="sinks of 'streaming' must be at least 0 .and finite., got -1"):
        make_variant("streaming", {"sinks": -1})
    with pytest.raises(PosbenchError, match="no recent keys at train_len 4"):
        make_variant("streaming").cache(4)
    tiny = build_encoding("rope", ModelShape(64, 2, 2, 4))
    assert "4 sinks leave no recent keys at train_len 4" in make_variant("streaming").undefined_for(tiny, 16)
    assert make_variant("streaming").undefined_for(rope, 64) is None


def test_the_cache_holds_the_sinks_and_train_len_minus_them_minus_one_recent_keys():
    from posbench.evaluation.variants.streaming import StreamingLLM

    v = make_variant("streaming")
    assert isinstance(v, StreamingLLM) and v.window and v.cache(16) == (4, 11)  # a query then sees train_len keys
    assert make_variant("streaming", {"sinks": 0, "recent": 7}).cache(16) == (0, 7)
    full = make_variant("streaming", {"sinks": 15})
    assert full.no_cache(16) == "15 sinks leave no recent keys at train_len 16 (sinks below 15, or give recent)"
    with pytest.raises(PosbenchError, match="streaming: 15 sinks leave no recent keys"):
        full.cache(16)
