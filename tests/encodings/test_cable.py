"""CABLE (posbench/encodings/cable.py): the bias is minus the sum of the tokens' softplus steps between
key and query, checked against a loop by hand, at the reference's initialisation, and as an ALiBi."""

import math

import torch
import torch.nn.functional as F

from posbench.encodings import ModelShape, build_encoding
from tests.helpers import attn_output, hf_visible, layer_inputs, model_of, naive

X = torch.Generator().manual_seed(1)


def test_cable_bias_is_minus_the_steps_between_key_and_query():
    model = model_of("cable")
    L = 18
    x = torch.randint(0, 256, (2, L), generator=X)
    a, q, k, v = layer_inputs(model, x, 2)
    step = F.softplus(model.encoding.steps[2](a)).transpose(1, 2)  # [B, H, L]
    D = torch.zeros(2, 4, L, L, dtype=torch.float64)
    for i in range(L):
        for j in range(i + 1):
            D[:, :, i, j] = -step[:, :, j + 1: i + 1].sum(-1)  # b_i - b_j = -sum_{s=j+1}^{i} softplus(.)
    y = naive(q @ k.transpose(-1, -2) / math.sqrt(8) + D, v, hf_visible(None, None, L))
    torch.testing.assert_close(attn_output(model, x, 2), model.blocks[2].attn.proj(y.transpose(1, 2).reshape(2, L, 32)))


def test_at_the_reference_initialisation_cable_is_alibi_with_slope_ln2():
    """Bias 0 and a zero input: every step is softplus(0) = ln 2, so the bias of a key d tokens back is
    -d ln 2 in every head: ALiBi with one slope."""
    enc = build_encoding("cable", ModelShape(32, 4, 2, 16))
    x = torch.zeros(1, 24, 32)
    term = enc.content_bias(x, None, None, 1)(torch.zeros(1, 4, 24, 24), 0, 24, 0, None)[0]
    i, j = torch.arange(24)[:, None], torch.arange(24)[None, :]
    want = (-(i - j) * math.log(2.0)).float()
    for h in range(4):
        torch.testing.assert_close(term[h][i >= j], want[i >= j])


def test_bias_is_zero_on_the_diagonal_and_never_grows_with_distance():
    enc = build_encoding("cable", ModelShape(32, 4, 2, 16))
    with torch.no_grad():
        for s in enc.steps:
            s.weight.normal_(std=1.0)
            s.bias.normal_(std=2.0)
    x = torch.randn(2, 40, 32)
    term = enc.content_bias(x, None, None, 0)(torch.zeros(2, 4, 40, 40), 0, 40, 0, None)
    assert torch.allclose(term.diagonal(dim1=-2, dim2=-1), torch.zeros(2, 4, 40), atol=1e-5)
    row = term[:, :, 39, :40]  # query 39 against keys 0..39
    assert torch.all(row[..., 1:] >= row[..., :-1]) and torch.all(row[..., :-1] < 0)
