"""SSMax (posbench/encodings/ssmax.py): softmax with base n, neutral at the training length."""

import math

import torch

from posbench.attention.options import AttentionOptions
from posbench.encodings import ModelShape, build_encoding
from tests.helpers import attn_output, hf_visible, layer_inputs, model_of, naive

X = torch.Generator().manual_seed(1)


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


def test_ssmax_scales_each_query_by_s_ln_n():
    """The query_scale hook: [H, L] factors s_h ln n, n the keys each query sees."""
    from posbench.encodings.ssmax import SSMax

    enc = build_encoding("ssmax", ModelShape(32, 4, 2, 64), {"init_s": 0.5})
    assert isinstance(enc, SSMax) and torch.all(enc.s == 0.5)
    keys = torch.tensor([1, 2, 10, 64])
    scale = enc.query_scale(torch.arange(4), keys, 1).detach()
    torch.testing.assert_close(scale, (0.5 * torch.log(keys.float()))[None, :].expand(4, 4))
