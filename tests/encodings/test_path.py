"""PaTH attention (posbench/encodings/path.py): the layer's attention is the reference's
``naive_path_attn`` on the layer's own q, k, v, w and beta; causal across chunks; the chunk size
changes nothing."""

import math

import pytest
import torch

from posbench.encodings import ModelShape, build_encoding
from tests.attention.test_householder import explicit_logits, naive_path_attn
from tests.helpers import attn_output, hf_visible, layer_inputs, model_of, naive

X = torch.Generator().manual_seed(3)


def reference_attention(model, x, layer, g=None):
    """FLA's naive_path_attn (float32) on the layer's q, k, v and its encoding's w, beta (and forget gates g)."""
    a, q, k, v = layer_inputs(model, x, layer)
    w, beta = model.encoding.householder[layer](a)
    g = torch.zeros_like(beta) if g is None else g
    t = lambda z: z.transpose(1, 2)  # noqa: E731 - the reference's [B, T, H, ...] layout
    y = t(naive_path_attn(t(q), t(k), t(v), t(w), t(beta), t(g), q.shape[-1] ** -0.5, chunk_size=8))
    B, L = x.shape
    return model.blocks[layer].attn.proj(y.transpose(1, 2).reshape(B, L, -1).to(q.dtype))


@pytest.mark.parametrize("chunk", [8, 64])
def test_the_layer_is_the_reference_naive_path_attn(chunk, monkeypatch):
    model = model_of("path")
    monkeypatch.setattr(model.encoding, "chunk", chunk)
    x = torch.randint(0, 256, (2, 29), generator=X)
    err = (attn_output(model, x, 1) - reference_attention(model, x, 1)).abs().max().item()
    assert err < 1e-5, err  # the reference runs in float32


def test_the_logits_are_the_householder_product_written_out():
    """logit_ij = q_i^T H_i ... H_{j+1} k_j / sqrt(d_h), the matrices multiplied one by one."""
    model = model_of("path")
    x = torch.randint(0, 256, (1, 12), generator=X)
    a, q, k, v = layer_inputs(model, x, 0)
    w, beta = model.encoding.householder[0](a)
    y = naive(explicit_logits(q, k, w, beta) / math.sqrt(8), v, hf_visible(None, None, 12))
    torch.testing.assert_close(attn_output(model, x, 0), model.blocks[0].attn.proj(y.transpose(1, 2).reshape(1, 12, 32)))


def test_w_is_unit_norm_from_a_causal_conv_and_beta_in_0_2():
    enc = build_encoding("path", ModelShape(32, 4, 2, 16))
    x = torch.randn(2, 10, 32)
    w, beta = enc.householder[1](x)
    assert w.shape == (2, 4, 10, 8) and beta.shape == (2, 4, 10)
    torch.testing.assert_close(w.norm(dim=-1), torch.ones(2, 4, 10))
    assert torch.all((beta > 0) & (beta < 2))
    torch.testing.assert_close(enc.householder[1](torch.zeros(1, 3, 32))[1], torch.ones(1, 4, 3))  # FLA's init: bias 0
    y = x.clone()
    y[:, 6:] += 1
    w2, beta2 = enc.householder[1](y)
    torch.testing.assert_close(w2[:, :, :6], w[:, :, :6])  # the conv looks back only
    assert not torch.allclose(w2[:, :, 6:], w[:, :, 6:])


@pytest.mark.parametrize("name", ["path", "path_fox"])
def test_a_future_token_changes_no_earlier_output_across_chunks(name, monkeypatch):
    model = model_of(name)
    monkeypatch.setattr(model.encoding, "chunk", 8)
    x = torch.randint(0, 256, (2, 40), generator=X)
    y = x.clone()
    y[:, 21] = (y[:, 21] + 1) % 256
    with torch.no_grad():
        a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :21], b[:, :21])
    assert not torch.allclose(a[:, 21:], b[:, 21:])


def test_the_chunk_size_changes_nothing_and_blocks_of_queries_neither(monkeypatch):
    """Chunks of 8 or 64 tokens, and one block of queries or many (masked_attention at 16x), give the same logits."""
    import posbench.attention.kernels as kernels

    model = model_of("path")
    x = torch.randint(0, 256, (1, 50), generator=X)
    with torch.no_grad():
        whole = model(x)
        monkeypatch.setattr(model.encoding, "chunk", 8)
        chunked = model(x)
        monkeypatch.setattr(kernels, "MAX_SCORE_ELEMENTS", 4 * 50 * 7)  # blocks of 7 queries
        monkeypatch.setattr(kernels.masked_attention, "__defaults__",
                            kernels.masked_attention.__defaults__[:-1] + (4 * 50 * 7,))
        blocked = model(x)
    torch.testing.assert_close(chunked, whole)
    torch.testing.assert_close(blocked, whole)


def test_a_sliding_window_hides_keys_but_not_the_householder_products_between():
    """encoding=layers pattern=[path/swa8]: keys outside the window are masked; the visible ones keep the
    whole product H_i ... H_{j+1} (blocks of keys starting past 0: tests/attention/test_householder.py)."""
    model = model_of("layers", {"pattern": ["path/swa8"]})
    model.encoding.parts["path"].chunk = 4
    x = torch.randint(0, 256, (1, 21), generator=X)
    a, q, k, v = layer_inputs(model, x, 1)
    w, beta = model.encoding.parts["path"].householder[1](a)
    y = naive(explicit_logits(q, k, w, beta) / math.sqrt(8), v, hf_visible("sliding", 8, 21))
    torch.testing.assert_close(attn_output(model, x, 1), model.blocks[1].attn.proj(y.transpose(1, 2).reshape(1, 21, 32)))
