"""PaTH-FoX (posbench/encodings/path_fox.py): PaTH's logits plus FoX's forget gates, as the reference's
``naive_path_attn`` with ``g`` (which scales the forget term by 1 / sqrt(d_h) too)."""

import torch

from tests.encodings.test_path import reference_attention
from tests.helpers import attn_output, layer_inputs, model_of

X = torch.Generator().manual_seed(4)


def test_the_layer_is_the_reference_naive_path_attn_with_forget_gates(monkeypatch):
    model = model_of("path_fox")
    monkeypatch.setattr(model.encoding, "chunk", 8)
    x = torch.randint(0, 256, (2, 27), generator=X)
    a, *_ = layer_inputs(model, x, 2)
    g = model.encoding.fox.log_forget(a, 2)  # ln f [B, H, L]
    err = (attn_output(model, x, 2) - reference_attention(model, x, 2, g)).abs().max().item()
    assert err < 1e-5, err
    # and the forget term matters: without it the output is PaTH's, not the reference's with g
    assert (attn_output(model, x, 2) - reference_attention(model, x, 2)).abs().max() > 1e-3
