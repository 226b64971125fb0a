"""Attention sinks (posbench/encodings/sink.py) against gpt-oss's eager attention in HF."""

import math

import torch
import torch.nn.functional as F

from posbench.attention.options import AttentionOptions
from tests.helpers import attn_output, hf_visible, layer_inputs, model_of

X = torch.Generator().manual_seed(1)


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


def test_a_sink_far_below_every_logit_changes_nothing(monkeypatch):
    """The sink only adds exp(sink_h) to each softmax denominator: at -1e4 the output is that of the
    same model without sinks."""
    from posbench.encodings.rope import RoPE
    from posbench.encodings.sink import Sink

    model = model_of("sink")
    assert isinstance(model.encoding, Sink) and isinstance(model.encoding, RoPE)
    x = torch.randint(0, 256, (2, 20), generator=X)
    with torch.no_grad():
        model.encoding.sinks.fill_(10.0)
        loud = model(x)  # a sink above the logits takes most of the attention
        model.encoding.sinks.fill_(-1e4)
        quiet = model(x)
        assert not torch.allclose(loud, quiet)
        monkeypatch.setattr(model.encoding, "sink", lambda layer: None)
        torch.testing.assert_close(model(x), quiet)
