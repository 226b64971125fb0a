"""Helpers shared by several test files: tiny models with their encodings' parameters moved off their
initial values, one layer's inputs and attention output, the whole-matrix attention formula with HF's
mask functions, a rotation by hand, and the extension overrides."""

import torch

from posbench.attention.options import AttentionOptions
from posbench.encodings.rope import apply_rotation, rotation_tables
from posbench.model.transformer import ModelConfig, build_model

CFG = ModelConfig(name="t", d_model=32, n_layers=4, n_heads=4, mlp_ratio=2)


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


def _rot(x, pos, inv):
    cos, sin = rotation_tables(pos, inv)
    return apply_rotation(x, cos, sin)


TINY = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4)


def tiny_model(name: str, train_len: int = 32):
    torch.manual_seed(0)
    return build_model(TINY, name, {}, train_len).eval()


def ext(*extra):
    return ["extend.length=64", *extra]
