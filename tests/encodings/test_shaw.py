"""Shaw et al.'s relative attention (posbench/encodings/shaw.py) against the naive formula."""

import math

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.encodings import shaw
from posbench.model.transformer import ModelConfig, build_model


def naive_relative_attention(q, k, v, dist_index, rel_q, rel_k, rel_v):
    """The formula with the full L x L x Dh tensors, for comparison."""
    L, D = q.shape[-2], q.shape[-1]
    rk = rel_k[:, dist_index] if rel_k.dim() == 3 else rel_k[dist_index]  # [H?, L, L, D]
    scores = q @ k.transpose(-1, -2) + (rel_q[..., :, None, :] * rk).sum(-1)
    scores = (scores / math.sqrt(D)).masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    a = scores.softmax(-1)
    out = a @ v
    if rel_v is not None:
        out = out + (a[..., None] * rel_v[dist_index]).sum(-2)
    return out


def test_shaw_matches_the_naive_formula():
    torch.manual_seed(0)
    from posbench.attention.kernels import relative_causal_attention

    B, H, L, D, K = 2, 3, 30, 8, 5
    q, k, v = (torch.randn(B, H, L, D, dtype=torch.float64) for _ in range(3))
    rel_k, rel_v = torch.randn(K + 1, D, dtype=torch.float64), torch.randn(K + 1, D, dtype=torch.float64)
    pos = torch.arange(L)
    dist = (pos[:, None] - pos[None, :]).clamp(0, K)
    expected = naive_relative_attention(q, k, v, dist, q, rel_k, rel_v)
    got = relative_causal_attention(q, k, v, pos, q, rel_k[None], rel_v, max_elements=B * H * L * 4)
    assert torch.allclose(got, expected, atol=1e-10)


def test_shaw_with_zero_relative_embeddings_is_plain_causal_attention():
    """init_std 0 (allowed: 0 is meaningful here) starts from content-only attention."""
    import torch.nn.functional as F

    from posbench.attention.options import AttentionOptions
    from posbench.encodings import ModelShape, build_encoding
    from posbench.encodings.shaw import Shaw

    enc = build_encoding("shaw", ModelShape(16, 2, 1, 16), {"init_std": 0.0, "max_distance": 4})
    assert isinstance(enc, Shaw) and enc.rel_k.shape == (1, 5, 8)  # distances 0..4, the last shared by the rest
    q, k, v = (torch.randn(1, 2, 12, 8, dtype=torch.float64) for _ in range(3))
    got = enc.double().relative_attention(q, k, v, torch.arange(12), 0, AttentionOptions())
    torch.testing.assert_close(got, F.scaled_dot_product_attention(q, k, v, is_causal=True))


@pytest.mark.parametrize("length", [5, 17, 300])
def test_evaluation_on_cpu_runs_the_band_and_one_sdpa_to_float_tolerance(length, monkeypatch):
    """Without grad on CPU, positions 0..L-1, Shaw's attention is the shifted SDPA
    over the keys past the clip plus a band of the nearer ones (clipped_relative_attention), equal to
    the distance-table path to 1e-5 in float32, with a temperature; other positions keep the table."""
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=32, n_layers=2, n_heads=2, mlp_ratio=2), "shaw", {}, 16).eval()
    with torch.no_grad():
        for p in model.encoding.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    band = shaw.clipped_relative_attention
    calls = []
    monkeypatch.setattr(shaw, "clipped_relative_attention", lambda *a: calls.append(1) or band(*a))
    x = torch.randint(0, 256, (2, length), generator=torch.Generator().manual_seed(0))
    options = AttentionOptions(logit_scale=0.8)
    with torch.no_grad():
        fast = model(x, None, options)
        assert len(calls) == 2
        model(x, torch.arange(length) * 2, options)  # not 0..L-1: the table path
        assert len(calls) == 2
    reference = model(x, None, options)  # with grad: the table path
    assert len(calls) == 2
    torch.testing.assert_close(fast, reference.detach(), rtol=1e-5, atol=1e-5)
