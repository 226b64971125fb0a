"""The 2024-2026 recipes (issue 24): windows, layer patterns, temperatures, sinks, gates and
content-dependent terms, each against its reference formula computed here independently, plus
causality, training and evaluation at every length on CPU."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from posbench.attention.kernels import Window, masked_attention
from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, build_encoding
from posbench.evaluation.variants import make_variant
from posbench.model.transformer import ModelConfig, build_model

MODERN = ["layers", "rope_swa", "irope", "rnope_swa", "ssmax", "sink", "gated", "fox", "cope", "stickbreaking"]
CFG = ModelConfig(name="t", d_model=32, n_layers=4, n_heads=4, mlp_ratio=2)
X = torch.Generator().manual_seed(1)


def model_of(name, params=None, train_len=16, cfg=CFG):
    torch.manual_seed(0)
    model = build_model(cfg, name, params or {}, train_len).double().eval()
    with torch.no_grad():  # move learned parameters off their (often zero) initial values
        for p in model.encoding.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model


def layer_inputs(model, x, layer=0):
    """(ln1 input of ``layer``, q, k, v [B, H, L, Dh]) as the model computes them."""
    h = model.tok_emb(x)
    for block in model.blocks[:layer]:
        h = block(h, model.encoding.at(block.attn.layer), torch.arange(x.shape[1]),
                  model.encoding.at(block.attn.layer).prepare(torch.arange(x.shape[1]), AttentionOptions()), AttentionOptions())
    a = model.blocks[layer].ln1(h)
    B, L, D = a.shape
    q, k, v = model.blocks[layer].attn.qkv(a).view(B, L, 3, CFG.n_heads, D // CFG.n_heads).permute(2, 0, 3, 1, 4)
    return a, q, k, v


def attn_output(model, x, layer=0, options=AttentionOptions()):
    """The attention sub-layer's output of ``layer`` (after the output projection)."""
    a, *_ = layer_inputs(model, x, layer)
    enc, pos = model.encoding.at(layer), torch.arange(x.shape[1])
    return model.blocks[layer].attn(a, enc, pos, enc.prepare(pos, options), options)


def naive(scores, v, visible, sink=None):
    """softmax over the visible keys (plus a sink logit per head, gpt-oss style) @ v, whole L x L."""
    scores = scores.masked_fill(~visible, float("-inf"))
    if sink is not None:
        scores = torch.cat([scores, sink.view(1, -1, 1, 1).expand(*scores.shape[:-1], 1)], dim=-1)
    p = scores.softmax(-1)
    return (p[..., :-1] if sink is not None else p) @ v


def hf_visible(kind, size, L):
    """HF transformers' mask functions: causal_mask_function + sliding_window_overlay
    (kv > q - window) or chunked_overlay (kv // chunk == q // chunk)."""
    q, kv = torch.arange(L)[:, None], torch.arange(L)[None, :]
    causal = kv <= q
    if kind is None:
        return causal
    return causal & ((kv > q - size) if kind == "sliding" else (kv // size == q // size))


# -- the kernel ------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, size", [("sliding", 5), ("chunked", 8), ("sliding", 100), (None, None)])
@pytest.mark.parametrize("with_sink", [False, True])
def test_masked_attention_equals_the_whole_matrix_formula(kind, size, with_sink):
    torch.manual_seed(0)
    B, H, L, D = 2, 3, 37, 8
    q, k, v = (torch.randn(B, H, L, D, dtype=torch.float64) for _ in range(3))
    slopes = torch.tensor([0.5, 0.25, 0.125], dtype=torch.float64)
    bias = -slopes[:, None, None] * (torch.arange(L)[:, None] - torch.arange(L)[None, :]).double()
    sink = torch.randn(H, dtype=torch.float64) if with_sink else None
    window = Window(kind, size) if kind else None
    expected = naive(q @ k.transpose(-1, -2) / math.sqrt(D) + bias, v, hf_visible(kind, size, L), sink)
    for max_elements in (1 << 24, B * H * L * 4):  # whole, and 4-query blocks
        got = masked_attention(q, k, v, None, lambda s, e, lo: bias[:, s:e, lo:e], window, sink,
                               max_elements=max_elements)
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)


def test_windows_count_their_keys_and_refuse_bad_settings():
    assert Window("sliding", 4).keys_seen(7).tolist() == [1, 2, 3, 4, 4, 4, 4]
    assert Window("chunked", 3).keys_seen(7).tolist() == [1, 2, 3, 1, 2, 3, 1]
    assert [Window("sliding", 4).first_key(s) for s in (0, 2, 10)] == [0, 0, 7]
    assert [Window("chunked", 4).first_key(s) for s in (0, 5, 9)] == [0, 4, 8]
    with pytest.raises(PosbenchError, match="window kind"):
        Window("banded", 4)
    with pytest.raises(PosbenchError, match="positive integer"):
        Window("sliding", 0)


# -- layer patterns: iRoPE, RNoPE-SWA, any encoding with a window -----------------------------------

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


# -- softmax: SSMax, logn, floor-log, sinks --------------------------------------------------------

def test_ssmax_is_softmax_with_base_n():
    """Nakanishi 2025: softmax_j((s ln n) z_ij) with n = i + 1 keys, s per layer and head."""
    model = model_of("ssmax")
    x = torch.randint(0, 256, (2, 30), generator=X)
    a, q, k, v = layer_inputs(model, x, 1)
    enc, pos = model.encoding, torch.arange(30)
    q, k = enc.rotate(q, k, enc.prepare(pos, AttentionOptions()))
    z = q @ k.transpose(-1, -2) / math.sqrt(8)
    n = torch.arange(1, 31, dtype=torch.float64)
    s = enc.s[1].detach()
    y = naive(z * (s[:, None, None] * n.log()[None, :, None]), v, hf_visible(None, None, 30))
    torch.testing.assert_close(attn_output(model, x, 1), model.blocks[1].attn.proj(y.transpose(1, 2).reshape(2, 30, 32)))
    fresh = build_encoding("ssmax", ModelShape(32, 4, 4, 64))
    assert torch.allclose(fresh.s, torch.full((4, 4), 1 / math.log(64)))  # neutral at the training length


def test_logn_and_floorlog_rows_scale_queries_as_qwen_and_llama4():
    from posbench.attention.temperatures import floor_log_scale, logn_scale

    T = 16
    pos = torch.arange(300)
    qwen = torch.tensor([math.log(i, T) if i > T else 1 for i in range(1, 301)])  # modeling_qwen's logn_list
    torch.testing.assert_close(logn_scale(pos, pos + 1, T), qwen.float())
    llama = torch.log1p(torch.floor((pos.float() + 1) / T)) * 0.1 + 1
    torch.testing.assert_close(floor_log_scale(pos, pos + 1, T, 0.1), llama)
    # as rows: nothing changes at 1x; past it every (global) layer's queries are scaled
    model = model_of("rope")
    x = torch.randint(0, 256, (1, 64), generator=X)
    for name in ("logn", "floorlog"):
        variant = make_variant(name)
        assert variant.options(AttentionOptions(), 64, T).query_scale is not None
        with torch.no_grad():
            plain, row = model(x), model(x, None, variant.options(AttentionOptions(), 64, T))
        torch.testing.assert_close(row[:, : T - 1], plain[:, : T - 1])
        assert not torch.allclose(row[:, -1], plain[:, -1])


def test_logn_on_rnope_swa_scales_only_the_global_layers():
    """SWAN-GPT's inference scaling: the NoPE (global) layers, not the sliding-window ones."""
    model = model_of("rnope_swa")
    x = torch.randint(0, 256, (1, 48), generator=X)
    opts = make_variant("logn").options(AttentionOptions(), 48, 16)
    torch.testing.assert_close(attn_output(model, x, 0, opts), attn_output(model, x, 0))  # rope/swa layer
    assert not torch.allclose(attn_output(model, x, 3, opts)[:, 20:], attn_output(model, x, 3)[:, 20:])


def test_a_layers_own_temperature_wins_over_a_rows():
    """Rows add a temperature to layers without one: SSMax's layers and iRoPE's global layers keep theirs."""
    x = torch.randint(0, 256, (1, 48), generator=X)
    for name, layer in (("ssmax", 0), ("irope", 3)):
        model = model_of(name)
        opts = make_variant("logn").options(AttentionOptions(), 48, 16)
        torch.testing.assert_close(attn_output(model, x, layer, opts), attn_output(model, x, layer))


@pytest.mark.parametrize("name", sorted(__import__("posbench.encodings", fromlist=["available"]).available()))
def test_a_temperature_row_is_offered_exactly_where_it_changes_the_output(name):
    """logn / floor-log rows apply to an encoding iff the model's output changes under them: none for
    one whose layers all have a window or a temperature of their own (rope_swa, iRoPE, SSMax) or that
    attends through relative_attention (Shaw, Transformer-XL), whose row would equal the plain row."""
    from posbench.evaluation.settings import EvalConfig
    from posbench.evaluation.variants import rows

    torch.manual_seed(0)
    model = build_model(CFG, name, {}, 64).eval()  # a table of 64 positions (learned); the rows say train_len 16
    with torch.no_grad():  # logits far from 0, where a temperature shows (at init attention is near uniform)
        for p in [*model.encoding.parameters(), *(b.attn.qkv.weight for b in model.blocks)]:
            p.add_(torch.randn_like(p) * 0.3)
    x = torch.randint(0, 256, (1, 48), generator=X)
    offered = {r.name for r in rows(model.encoding, EvalConfig(variants=["logn", "floorlog"], bca=[]))}
    for variant in ("logn", "floorlog"):
        with torch.no_grad():
            row = model(x, None, make_variant(variant).options(AttentionOptions(), 48, 16))
            changes = not torch.equal(row, model(x))  # a row that does not apply is the plain row, bit for bit
        assert (f"{name}+{variant}" in offered) == changes, (name, variant, changes)


def test_sink_matches_gpt_oss_eager_attention():
    """HF gpt_oss eager_attention_forward: cat the sink logit to each row, softmax, drop it."""
    model = model_of("sink")
    x = torch.randint(0, 256, (2, 25), generator=X)
    a, q, k, v = layer_inputs(model, x, 2)
    enc, pos = model.encoding, torch.arange(25)
    q, k = enc.rotate(q, k, enc.prepare(pos, AttentionOptions()))
    logits = (q @ k.transpose(-1, -2) / math.sqrt(8)).masked_fill(~hf_visible(None, None, 25), float("-inf"))
    combined = torch.cat([logits, enc.sinks[2].detach().view(1, -1, 1, 1).expand(2, -1, 25, 1)], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    y = F.softmax(combined, dim=-1)[..., :-1] @ v
    torch.testing.assert_close(attn_output(model, x, 2), model.blocks[2].attn.proj(y.transpose(1, 2).reshape(2, 25, 32)))


# -- output gate -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["elementwise", "headwise"])
def test_gated_attention_matches_qiu_et_al(kind):
    """qiuzh20/gated_attention: attn_output * sigmoid(gate_score), gate from the layer input, before o_proj."""
    model = model_of("gated", {"kind": kind})
    x = torch.randint(0, 256, (2, 20), generator=X)
    a, q, k, v = layer_inputs(model, x, 1)
    enc, pos = model.encoding, torch.arange(20)
    q, k = enc.rotate(q, k, enc.prepare(pos, AttentionOptions()))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2)  # [B, L, H, Dh]
    gate = enc.gates[1](a).view(2, 20, 4, -1)
    want = model.blocks[1].attn.proj((y * torch.sigmoid(gate)).reshape(2, 20, 32))
    torch.testing.assert_close(attn_output(model, x, 1), want)
    assert enc.gates[1].weight.shape == ((32, 32) if kind == "elementwise" else (4, 32))


# -- content-dependent terms: FoX, CoPE -------------------------------------------------------------

def test_fox_bias_is_the_sum_of_log_forget_gates_between_key_and_query():
    model = model_of("fox")
    x = torch.randint(0, 256, (2, 18), generator=X)
    a, q, k, v = layer_inputs(model, x, 2)
    log_f = F.logsigmoid(model.encoding.fgate[2](a)).transpose(1, 2)  # [B, H, L]
    L = 18
    D = torch.zeros(2, 4, L, L, dtype=torch.float64)
    for i in range(L):
        for j in range(i + 1):
            D[:, :, i, j] = log_f[:, :, j + 1 : i + 1].sum(-1)  # sum_{t=j+1}^{i} log f_t
    y = naive(q @ k.transpose(-1, -2) / math.sqrt(8) + D, v, hf_visible(None, None, L))
    torch.testing.assert_close(attn_output(model, x, 2), model.blocks[2].attn.proj(y.transpose(1, 2).reshape(2, L, 32)))


def reference_cope(q, k, v, pos_emb, npos):
    """facebookresearch/RAM projects/cope ContextPosSelfAttn.forward (defaults), one pair at a time."""
    B, H, L, D = q.shape
    logits = torch.full((B, H, L, L), float("-inf"), dtype=q.dtype)
    for i in range(L):
        gates = [torch.sigmoid((q[:, :, i] * k[:, :, t]).sum(-1) / math.sqrt(D)) for t in range(i + 1)]
        for j in range(i + 1):
            p = torch.clamp(sum(gates[j : i + 1]), max=npos - 1)
            lo, hi = p.floor().long(), p.ceil().long()
            e_lo = (q[:, :, i] * pos_emb[:, lo].permute(1, 2, 0)).sum(-1)
            e_hi = (q[:, :, i] * pos_emb[:, hi].permute(1, 2, 0)).sum(-1)
            w = p - lo
            pos_logit = e_hi * w + e_lo * (1 - w)
            logits[:, :, i, j] = ((q[:, :, i] * k[:, :, j]).sum(-1) + pos_logit) / math.sqrt(D)
    return logits.softmax(-1) @ v


@pytest.mark.parametrize("L", [9, 24])  # 24 > npos: counted positions clamp at npos - 1
def test_cope_matches_the_reference_definition(L):
    model = model_of("cope", train_len=8)
    x = torch.randint(0, 256, (1, L), generator=X)
    a, q, k, v = layer_inputs(model, x, 1)
    enc = model.encoding
    assert enc.npos == 9 and enc.pos_emb.shape == (4, 8, 9)
    y = reference_cope(q, k, v, enc.pos_emb[1].detach(), enc.npos)
    torch.testing.assert_close(attn_output(model, x, 1), model.blocks[1].attn.proj(y.transpose(1, 2).reshape(1, L, 32)))
    assert torch.all(build_encoding("cope", ModelShape(32, 4, 4, 8)).pos_emb == 0)  # the reference's init


def reference_stick_breaking(q, k, v, attend_current=False, keep=None):
    """Stick-breaking attention pair by pair, as shawntan/stickbreaking-attention's tests define it:
    A_ij = beta_ij prod_{j < t <= last} (1 - beta_it), last = i - 1 (i with attend_current), and
    out_i = sum_j A_ij v_j + (1 - sum_j A_ij) v_i. ``keep(i, j)``: which keys exist (bca)."""
    B, H, L, D = q.shape
    beta = torch.sigmoid(q @ k.transpose(-1, -2) / math.sqrt(D))
    out = torch.zeros_like(v)
    for i in range(L):
        last = i if attend_current else i - 1
        keys = [j for j in range(last + 1) if keep is None or keep(i, j)]
        total = torch.zeros(B, H, dtype=q.dtype)
        for j in keys:
            a = beta[:, :, i, j].clone()
            for t in keys:
                if t > j:
                    a = a * (1 - beta[:, :, i, t])
            out[:, :, i] += a[..., None] * v[:, :, j]
            total += a
        out[:, :, i] += (1 - total)[..., None] * v[:, :, i]
    return out


@pytest.mark.parametrize("attend_current", [False, True])
def test_stick_breaking_matches_the_reference_definition(attend_current):
    model = model_of("stickbreaking", {"attend_current": attend_current})
    x = torch.randint(0, 256, (2, 21), generator=X)
    a, q, k, v = layer_inputs(model, x, 2)
    y = reference_stick_breaking(q, k, v, attend_current)
    torch.testing.assert_close(attn_output(model, x, 2), model.blocks[2].attn.proj(y.transpose(1, 2).reshape(2, 21, 32)))
    if not attend_current:  # the first token has no earlier key: the whole stick is left, its own value
        torch.testing.assert_close(y[:, :, 0], v[:, :, 0])


def test_stick_breaking_in_blocks_of_queries_and_with_blockwise_causal_keys():
    from posbench.attention.kernels import future_mask, stick_breaking_attention

    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 2, 19, 8, generator=g, dtype=torch.float64) for _ in range(3))
    whole = stick_breaking_attention(q, k, v)
    torch.testing.assert_close(stick_breaking_attention(q, k, v, max_elements=4 * 2 * 19 * 3), whole)  # 3 queries a block
    hidden = future_mask(0, 19, "cpu", block=4)
    torch.testing.assert_close(stick_breaking_attention(q, k, v, block=4),
                               reference_stick_breaking(q, k, v, keep=lambda i, j: not hidden[i, j]))


# -- every method: causal, trains, scores every token at every length --------------------------------

@pytest.mark.parametrize("name", MODERN)
def test_past_tokens_never_see_the_future_at_long_lengths(name):
    model = model_of(name)
    x = torch.randint(0, 256, (2, 80), generator=X)  # 5x the training length: windows, clamps, temperatures
    y = x.clone()
    y[:, 50:] = (y[:, 50:] + 1) % 256
    with torch.no_grad():
        a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :50], b[:, :50])
    assert not torch.allclose(a[:, 50:], b[:, 50:])


def test_a_window_of_the_whole_length_is_plain_attention_and_diagnostics_agree():
    from posbench.evaluation.diagnostics import AttentionRecorder

    model = model_of("alibi")
    x = torch.randint(0, 256, (2, 40), generator=X)
    whole = AttentionOptions(window=Window("sliding", 40))
    stats = []
    for opts in (AttentionOptions(), whole):
        rec = AttentionRecorder(CFG.n_layers, CFG.n_heads)
        with torch.no_grad():
            out = model(x, None, opts.replace(recorder=rec))
        stats.append((out, rec.records()))
    torch.testing.assert_close(stats[0][0], stats[1][0])
    for r0, r1 in zip(stats[0][1], stats[1][1]):
        assert r0["mean_distance"] == pytest.approx(r1["mean_distance"]) and r0["entropy"] == pytest.approx(r1["entropy"])


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


@pytest.mark.parametrize("name", MODERN)
def test_each_method_trains_and_scores_every_token_at_every_length(name):
    from posbench.evaluation.perplexity import evaluate_model
    from posbench.evaluation.settings import EvalConfig
    from posbench.training.trainer import TrainConfig, train_model

    torch.manual_seed(0)
    cfg = ModelConfig(name="t", d_model=32, n_layers=4, n_heads=2, mlp_ratio=2)
    model = build_model(cfg, name, {}, 16)
    rng = np.random.default_rng(0)
    tokens = rng.integers(97, 123, size=20000).astype(np.uint8)
    before = [p.detach().clone() for p in model.encoding.parameters()]
    out = train_model(model, tokens, tokens[:4000], TrainConfig(steps=3, batch_size=4, warmup_steps=1, val_every=3,
                                                                  val_batches=1, log_every=1), 16, 0, torch.device("cpu"))
    assert out["status"] == "completed", out
    assert all(not torch.equal(a, b) for a, b in zip(before, model.encoding.parameters()))  # its own parameters learn
    eval_cfg = EvalConfig(multiples=[1, 4, 16], protocols=["nonoverlapping"], scored_tokens=256, target_docs=4,
                          batch_tokens=1024, bca=[], variants=["logn"])
    records, _ = evaluate_model(model.eval(), tokens[:6000], 16, eval_cfg, torch.device("cpu"), progress=False)
    names = (name, f"{name}+logn") if make_variant("logn").applies_to(model.encoding) else (name,)  # see above
    assert {(r["variant"], r["length"]) for r in records} == {(v, L) for v in names for L in (16, 64, 256)}
    assert all(r["reason"] is None and math.isfinite(r["ppl"]) and r["tokens_scored"] == 256 for r in records)
    assert len({r["token_set"] for r in records}) == 1  # the same tokens at every length


def test_a_pattern_is_undefined_where_a_part_is(monkeypatch):
    """A layer pattern cannot score a length one of its parts cannot: the reason is the part's."""
    from posbench.encodings.nope import NoPE

    monkeypatch.setattr(NoPE, "undefined_reason", lambda self, length: "too long for nope" if length > 32 else None)
    enc = build_encoding("rnope_swa", ModelShape(32, 4, 4, 16))
    assert enc.undefined_reason(32) is None and enc.undefined_reason(64) == "too long for nope"


def test_new_encodings_leave_existing_run_ids_alone(compose):
    """Adding encodings and hooks changes no existing run's id (ids hash the encoding, model and
    train sections): these are the ids the code before issue 24 gave (tests/test_run_ids.py checks
    every committed run as well)."""
    assert compose("encoding=rope").run_id == "rope_small_L64_s0_ebc4180d09"
    assert compose("encoding=alibi", "train_len=128", "seed=2").run_id == "alibi_small_L128_s2_9dde0697e5"


@pytest.mark.slow
@pytest.mark.parametrize("pattern", [["nope/swa64"], ["alibi/chunk64"]])
def test_flex_window_attention_matches_the_explicit_path(pattern):
    """CPU evaluation at 1024 tokens goes through compiled flex attention with a window block mask."""
    from posbench.attention import kernels as attention

    if not attention.flex_supported():
        pytest.skip("flex attention not importable in this torch")
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4, mlp_ratio=2), "layers",
                        {"pattern": pattern}, 128).eval()  # a window of 64 keys, below train_len
    x = torch.randint(0, 256, (1, 1024), generator=X)
    with torch.no_grad():
        ref = model(x, None, AttentionOptions(kernel="chunked"))
        out = model(x, None, AttentionOptions(kernel="flex"))
    assert attention._flex_state["broken"] is None, attention._flex_state["broken"]
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


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
