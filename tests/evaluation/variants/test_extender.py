"""The training-free extenders ReRoPE, SelfExtend and DCA (posbench/evaluation/variants/rerope.py,
selfextend.py, dca.py on extender.py) against literal full-matrix versions of their reference code."""

import math

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import plain_frequencies
from posbench.encodings import ModelShape, build_encoding
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import make_variant, rows
from posbench.model.transformer import ModelConfig, build_model
from tests.helpers import _rot

TINY = ModelConfig(name="tiny", d_model=64, n_layers=2, n_heads=2)


def literal(q, k, v, inv, pieces_full, scale):
    """Full-matrix attention as the reference patches compute it: every piece's L x L logits, merged
    with torch.where (later pieces win where their mask holds), causal mask, softmax."""
    L = q.shape[-2]
    logits = None
    for qpos, kpos, mask in pieces_full:
        s = _rot(q, qpos, inv) @ _rot(k, kpos, inv).transpose(-1, -2)
        logits = s if logits is None else torch.where(mask, s, logits)
    logits = (logits * scale).masked_fill(torch.ones(L, L).triu(1).bool(), float("-inf"))
    return logits.softmax(-1) @ v


def test_rerope_selfextend_dca_match_their_reference_formulas():
    torch.manual_seed(0)
    L, T = 96, 16
    q, k, v = (torch.randn(2, 2, L, 32) for _ in range(3))
    enc = build_encoding("rope", ModelShape(64, 2, 1, T))
    inv = plain_frequencies(32, 10000.0)
    pos = torch.arange(L)
    i, j = pos[:, None], pos[None, :]
    opts = AttentionOptions()
    # ReRoPE, w = 4, log-n on q (bojone/rerope rerope_patch.py)
    w = T // 4
    qs = q * ((pos + 1).double().log() / math.log(T)).clamp(min=1).float()[:, None]
    ref = literal(qs, k, v, inv, [(torch.full_like(pos, w), torch.zeros_like(pos), None), (pos, pos, (i - j).abs() < w)],
                  32 ** -0.5)
    got = make_variant("rerope").attend(q, k, v, enc, pos, opts, train_len=T)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)
    # SelfExtend, W = 4, G = ceil((96 - 4) / (16 - 4)) = 8 (datamllab/LongLM self_extend_patch/Llama.py)
    W, G = 4, 8
    gq, gk = pos // G + W - W / G, pos // G
    neighbour = torch.tril(torch.ones(L, L))
    neighbour[W:, :-W] -= torch.tril(torch.ones(L - W, L - W))
    ref = literal(q, k, v, inv, [(gq, gk, None), (pos, pos, neighbour.bool())], 32 ** -0.5)
    se = make_variant("selfextend")
    assert se.sizes(L, T) == (W, G) and se.sizes(T, T) == (W, 1)
    torch.testing.assert_close(se.attend(q, k, v, enc, pos, opts, train_len=T), ref, rtol=1e-4, atol=1e-5)
    # DCA, chunk_size 12, local_window 2: chunks of 10 (HKUNLP/ChunkLlama chunkllama_attn_replace.py)
    cs, lw = 12, 2
    c = cs - lw
    ch, inner = pos // c, pos % c
    mscale = 0.05 * math.log(L / T) + 1
    ref = literal(q, k, v, inv, [(torch.full_like(pos, min(2 * c - 1, cs)), inner, None),
                                 ((inner + c).clamp(max=cs), inner, ch[None, :] == ch[:, None] - 1),
                                 (inner, inner, ch[None, :] == ch[:, None])], 32 ** -0.5 * mscale ** 2)
    dca = make_variant("dca")
    assert dca.sizes(T) == (cs, lw)
    torch.testing.assert_close(dca.attend(q, k, v, enc, pos, opts, train_len=T), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("encoding", ["rope", "sink", "ssmax"])
def test_extenders_are_plain_rope_where_they_change_nothing_and_rows_for_rope_only(encoding):
    """Set so that they move nothing, ReRoPE, SelfExtend and DCA give the model's own output, a sink logit's and
    SSMax's temperature's included (their terms set far from their initial values, so that dropping one shows)."""
    torch.manual_seed(0)
    model = build_model(TINY, encoding, {}, 16).eval()
    x = torch.randint(0, 256, (2, 48))
    with torch.no_grad():
        for p in model.encoding.parameters():
            p.copy_(torch.rand_like(p) + 0.5)
        plain = model(x)
        for name, params in [("rerope", {"window": 48, "logn": False}), ("selfextend", {"group": 1}),
                             ("dca", {"chunk_size": 60, "local_window": 0, "mscale": False})]:
            v = make_variant(name, params)
            torch.testing.assert_close(model(x, None, v.options(AttentionOptions(), 48, 16)), plain, rtol=1e-4, atol=1e-5)
    ev = EvalConfig(multiples=[1, 4], variants=["rerope", "selfextend", "dca", {"name": "rerope", "window": 8}])
    assert [r.name for r in rows(model.encoding, ev)] == [encoding + s for s in ("", "+rerope", "+selfextend", "+dca", "+reropew8")]
    alibi = build_encoding("alibi", ModelShape(64, 2, 2, 16))
    assert [r.name for r in rows(alibi, ev)] == ["alibi"]


def test_the_extenders_apply_to_rope_models_only():
    """Their kernel rotates and computes a softmax with a sink logit and a query temperature at most: RoPE,
    p-RoPE, SSMax and sinks (tests/evaluation/variants/test_streaming.py checks their terms), not xPos (its
    decay is centred), nor a bias encoding."""
    from posbench.evaluation.variants.extender import RotaryExtender

    shape = ModelShape(32, 4, 2, 16)
    for name in ("rerope", "selfextend", "dca", "streaming"):
        v = make_variant(name)
        assert isinstance(v, RotaryExtender)
        assert {e for e in ("rope", "p_rope", "xpos", "ssmax", "sink", "alibi", "nope")
                if v.applies_to(build_encoding(e, shape))} == {"rope", "p_rope", "ssmax", "sink"}, name


def test_a_layer_with_its_own_temperature_takes_none_of_the_extender_s():
    """SSMax's temperature and ReRoPE's log-n (or DCA's mscale) would stack: as a row temperature in the plain path,
    the extender's gives way to the layer's own, so the log-n setting changes nothing on SSMax and does on RoPE."""
    torch.manual_seed(0)
    x = torch.randint(0, 256, (2, 48))
    for encoding, same in (("ssmax", True), ("rope", False)):
        model = build_model(TINY, encoding, {}, 16).eval()
        with torch.no_grad():
            on, off = (model(x, None, make_variant(name, params).options(AttentionOptions(), 48, 16))
                       for name, params in (("rerope", {"logn": True}), ("rerope", {"logn": False})))
        assert torch.allclose(on, off, atol=1e-6) is same, encoding
