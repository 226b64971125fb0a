"""Transformer-XL's relative attention (posbench/encodings/transformer_xl.py): the paper's formula
term by term, and u, v starting like the authors' weights."""

import math

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.encodings import ModelShape, build_encoding, transformer_xl
from posbench.encodings.sinusoidal import sinusoidal_table


def test_transformer_xl_u_v_start_like_the_authors_weights():
    torch.manual_seed(0)
    enc = build_encoding("transformer_xl", ModelShape(128, 8, 2, 16))
    for p in (enc.u, enc.v):
        assert p.shape == (8, 16) and p.std().item() == pytest.approx(0.02, rel=0.2)


@pytest.mark.parametrize("grad", [True, False])  # False: evaluation's split_attention (one SDPA call)
def test_transformer_xl_matches_the_paper_formula(grad):
    """A_ij = q.k + q.W_R R_{i-j} + u.k + v.W_R R_{i-j}, computed term by term."""
    torch.manual_seed(0)
    shape = ModelShape(16, 2, 1, 12)
    enc = build_encoding("transformer_xl", shape).double()
    with torch.no_grad():
        enc.u.normal_()
        enc.v.normal_()
    B, H, L, D = 1, 2, 12, 8
    q, k, v = (torch.randn(B, H, L, D, dtype=torch.float64) for _ in range(3))
    pos = torch.arange(L)
    with torch.set_grad_enabled(grad):
        got = enc.relative_attention(q, k, v, pos, 0, AttentionOptions())
    R = enc.w_r[0](sinusoidal_table(L, 16).double()).view(L, H, D).transpose(0, 1)  # [H, dist, D]
    dist = pos[:, None] - pos[None, :]
    A = torch.zeros(B, H, L, L, dtype=torch.float64)
    for i in range(L):
        for j in range(i + 1):
            r = R[:, dist[i, j]]
            A[0, :, i, j] = (q[0, :, i] * k[0, :, j]).sum(-1) + (q[0, :, i] * r).sum(-1) + (enc.u * k[0, :, j]).sum(-1) + (enc.v * r).sum(-1)
    A = (A / math.sqrt(D)).masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    assert torch.allclose(got, A.softmax(-1) @ v, atol=1e-10)


@pytest.mark.parametrize("positions", ["contiguous", "sorted", "unsorted"])
def test_evaluation_splits_the_sinusoids_to_float_tolerance(positions, monkeypatch):
    """Without grad (evaluation) the logits are one SDPA over [q + u, Q'] . [k, K']
    (split_attention), equal to the distance-table path to 1e-5 in float32 at 600 tokens, with a
    temperature; positions that go back (j < i, p_j > p_i) keep the table path, which clamps them."""
    torch.manual_seed(0)
    enc = build_encoding("transformer_xl", ModelShape(64, 4, 1, 16))
    with torch.no_grad():
        enc.u.normal_(), enc.v.normal_(), enc.w_r[0].weight.mul_(10)
    B, H, L, D = 2, 4, 600, 16
    q, k, v = (torch.randn(B, H, L, D) for _ in range(3))
    pos = {"contiguous": torch.arange(L), "sorted": torch.randint(0, 4 * L, (L,)).sort().values,
           "unsorted": torch.randperm(L)}[positions]
    options = AttentionOptions(logit_scale=0.8)
    with torch.no_grad():
        table = transformer_xl.relative_causal_attention  # the table path, called by relative_attention
        calls = []
        monkeypatch.setattr(transformer_xl, "relative_causal_attention", lambda *a, **kw: calls.append(1) or table(*a, **kw))
        split = enc.relative_attention(q, k, v, pos, 0, options)
    assert len(calls) == (positions == "unsorted")
    with torch.enable_grad():
        reference = enc.relative_attention(q, k, v, pos, 0, options)
    assert len(calls) == 1 + (positions == "unsorted")
    torch.testing.assert_close(split, reference.detach(), rtol=1e-5, atol=1e-5)


def test_transformer_xl_without_its_position_terms_is_plain_causal_attention():
    """W_R = 0 and u = 0 leave q . k alone: the relative path is then content attention."""
    import torch.nn.functional as F

    from posbench.encodings.transformer_xl import TransformerXL

    enc = build_encoding("transformer_xl", ModelShape(16, 2, 3, 12)).double()
    assert isinstance(enc, TransformerXL) and len(enc.w_r) == 3 and enc.u.shape == (2, 8)  # W_R per layer, u and v shared
    with torch.no_grad():
        for w in enc.w_r:
            w.weight.zero_()
        enc.u.zero_()
    q, k, v = (torch.randn(1, 2, 12, 8, dtype=torch.float64) for _ in range(3))
    got = enc.relative_attention(q, k, v, torch.arange(12), 1, AttentionOptions())
    torch.testing.assert_close(got, F.scaled_dot_product_attention(q, k, v, is_causal=True))
