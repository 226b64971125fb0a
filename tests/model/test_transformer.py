"""posbench/model/transformer.py: the attention forward that runs the kernel ``choose_kernel`` picks
gives, bit for bit, the logits of the forward it replaced (main at 62efeba, kept below as
``legacy_forward``) for every registered encoding under every kind of attention option; positions
given as 0..L-1 and left out give the same logits."""

from functools import partial

import pytest
import torch

from posbench.attention.kernels import (
    Window,
    biased_causal_attention,
    causal_attention,
    distance_bias_attention,
    masked_attention,
    window_attention,
)
from posbench.attention.options import AttentionOptions
from posbench.attention.temperatures import logn_scale
from posbench.encodings import available
from posbench.evaluation.diagnostics import AttentionRecorder
from posbench.evaluation.variants import make_variant
from posbench.model import kernel_choice
from posbench.model.transformer import CausalSelfAttention, ModelConfig, build_model, temper

CFG = ModelConfig(name="t", d_model=32, n_layers=3, n_heads=2, mlp_ratio=2)
TRAIN, L = 16, 40
X = torch.randint(0, 256, (2, L), generator=torch.Generator().manual_seed(1))
CASES = {
    "plain": AttentionOptions(), "block": AttentionOptions(block=8),
    "sliding": AttentionOptions(window=Window("sliding", 8)), "chunked_window": AttentionOptions(window=Window("chunked", 8)),
    "temperature": AttentionOptions(logit_scale=0.7), "logn": AttentionOptions(query_scale=partial(logn_scale, train_len=TRAIN)),
    "logn_window": AttentionOptions(query_scale=partial(logn_scale, train_len=TRAIN), window=Window("sliding", 8)),
    "temperature_block": AttentionOptions(logit_scale=1.3, block=8), "chunked": AttentionOptions(kernel="chunked"),
}


def legacy_forward(self, x, enc, positions, pos_state, options, flex=False):
    """CausalSelfAttention.forward as it was before posbench/model/kernel_choice.py (verbatim, but for the layer
    an extender is now told: it takes a sink logit and SSMax's temperature along, which are per layer)."""
    B, L, D = x.shape
    qkv = self.qkv(x) if self.canon_b is None else self.canon_b(self.qkv(x))
    q, k, v = qkv.view(B, L, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)
    block = options.block
    if enc.uses_relative:
        y = enc.relative_attention(q, k, v, positions, self.layer, options)
    elif options.attention is not None and enc.uses_rotation:
        y = options.attention(q, k, v, enc, positions, options, layer=self.layer)
    else:
        if enc.uses_rotation:
            q, k = enc.rotate(q, k, pos_state)
        own = enc.window(self.layer)
        window = own or options.window
        q = temper(q, enc, positions, window, self.layer, options.query_scale if own is None else None)
        scale, t = enc.softmax_scale(pos_state), options.logit_scale
        if t != 1.0:
            scale = (scale if scale is not None else q.shape[-1] ** -0.5) * t
        bias_fn = (lambda i, j: enc.bias(i, j, self.layer) * t) if enc.uses_bias else None  # noqa: E731
        sink, content = enc.sink(self.layer), enc.content_bias(x, q, k, self.layer)
        if window is not None or sink is not None or content is not None:
            y = None
            if flex and window is not None and sink is None and content is None and block is None \
                    and (q.device.type == "cuda" or options.kernel == "flex") \
                    and (bias_fn is None or enc.translation_invariant):
                table = enc.bias(positions, positions[:1], self.layer)[:, :, 0] * t if bias_fn else None
                y = window_attention(q, k, v, window, table, scale)
            if y is None:
                bias = (lambda s, e, lo: bias_fn(positions[s:e], positions[lo:e])) if bias_fn else None  # noqa: E731
                weights = partial(options.recorder.add_weights, self.layer) if options.recorder is not None else None
                y = masked_attention(q, k, v, scale, bias, window, sink, content, block, weights)
        else:
            if options.recorder is not None:
                options.recorder.add(self.layer, q, k, scale, bias_fn, positions, block)
            if block is not None:
                y = biased_causal_attention(q, k, v, bias_fn, positions, scale, block=block)
            elif enc.uses_bias:
                y = None
                if flex and enc.translation_invariant:
                    table = enc.bias(positions, positions[:1], self.layer)[:, :, 0] * t
                    y = distance_bias_attention(q, k, v, table, scale)
                if y is None:
                    y = biased_causal_attention(q, k, v, bias_fn, positions, scale)
            else:
                y = causal_attention(q, k, v, scale)
    y = enc.gate(x, y, self.layer)
    return self.dropout(self.proj(y.transpose(1, 2).reshape(B, L, D)))


def outputs(model, cases):
    """{case: logits (and the recorder's records)} for the model's current forward."""
    out = {}
    with torch.no_grad():
        for case, options in cases.items():
            out[case] = model(X, None, options)
        recorder = AttentionRecorder(CFG.n_layers, CFG.n_heads)
        out["recorder"] = (model(X, None, AttentionOptions(recorder=recorder)), recorder.records())
        out["positions"] = model(X, torch.arange(L) * 2 % 37)
        model.train()
        out["training"] = model(X)
        model.eval()
    return out


# learned: no table past 16; tape: the old forward predates the state carried from layer to layer
# (tests/encodings/test_tape.py checks its forward against the reference code's, under every option)
@pytest.mark.parametrize("name", [n for n in available() if n not in ("learned", "tape")])
def test_the_forward_gives_the_old_forwards_logits_bit_for_bit(name, monkeypatch):
    # CoPE's band (a kernel the old forward did not have) equals the explicit kernel to float tolerance,
    # not bit for bit: tests/encodings/test_cope.py compares them
    monkeypatch.setattr(kernel_choice, "band_runs", lambda *a: False)
    torch.manual_seed(0)
    model = build_model(CFG, name, {}, TRAIN).eval()
    with torch.no_grad():  # learned parameters off their (often zero) initial values
        for p in model.encoding.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    cases = dict(CASES)
    if (rerope := make_variant("rerope")).applies_to(model.encoding):
        cases["extender"] = rerope.options(AttentionOptions(), L, TRAIN)
    new = outputs(model, cases)
    monkeypatch.setattr(CausalSelfAttention, "forward", legacy_forward)
    old = outputs(model, cases)
    for case in old:
        a, b = (old[case], new[case]) if case != "recorder" else (old[case][0], new[case][0])
        assert torch.equal(a, b), f"{name} {case}"
    assert old["recorder"][1] == new["recorder"][1]


def test_positions_left_out_are_0_to_L_minus_1():
    model = build_model(CFG, "alibi", {}, TRAIN).eval()
    with torch.no_grad():
        torch.testing.assert_close(model(X), model(X, torch.arange(L)), rtol=0, atol=0)
