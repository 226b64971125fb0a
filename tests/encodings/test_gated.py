"""Gated attention (posbench/encodings/gated.py) against Qiu et al.'s code."""

import pytest
import torch
import torch.nn.functional as F

from posbench.attention.options import AttentionOptions
from posbench.encodings import ModelShape, build_encoding
from tests.helpers import attn_output, layer_inputs, model_of

X = torch.Generator().manual_seed(1)


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


def test_a_headwise_gate_is_one_number_per_head_and_a_zero_gate_halves_the_output():
    from posbench.core.errors import PosbenchError
    from posbench.encodings.gated import GatedAttention
    from posbench.encodings.rope import RoPE

    enc = build_encoding("gated", ModelShape(32, 4, 1, 16), {"kind": "headwise"})
    assert isinstance(enc, GatedAttention) and isinstance(enc, RoPE)  # the gate sits on RoPE attention
    with torch.no_grad():
        enc.gates[0].weight.zero_()
    y = torch.randn(2, 4, 5, 8)
    torch.testing.assert_close(enc.gate(torch.randn(2, 5, 32), y, 0), y * 0.5)  # sigmoid(0) on every head
    with pytest.raises(PosbenchError, match="must be elementwise or headwise, got 'channelwise'"):
        build_encoding("gated", ModelShape(32, 4, 1, 16), {"kind": "channelwise"})
