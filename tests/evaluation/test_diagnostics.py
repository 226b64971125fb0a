"""Attention diagnostics (posbench/evaluation/diagnostics.py): the recorder against an explicit
softmax, uniform attention without positions, and a window of the whole length changes nothing."""

import numpy as np
import pandas as pd
import pytest
import torch

from posbench.attention.kernels import Window
from posbench.attention.options import AttentionOptions
from posbench.model.transformer import ModelConfig
from tests.helpers import model_of

CFG = ModelConfig(name="t", d_model=32, n_layers=4, n_heads=4, mlp_ratio=2)


X = torch.Generator().manual_seed(1)


def test_a_window_of_the_whole_length_is_plain_attention_and_diagnostics_agree():
    from posbench.evaluation.diagnostics import AttentionRecorder

    model = model_of("alibi")
    x = torch.randint(0, 256, (2, 40), generator=X)
    whole = AttentionOptions(window=Window("sliding", 40))
    stats = []
    for opts in (AttentionOptions(), whole):
        rec = AttentionRecorder(CFG.n_layers, CFG.n_heads)
        with torch.no_grad():
            out = model(x, None, opts.replace(recorder=rec))
        stats.append((out, rec.records()))
    torch.testing.assert_close(stats[0][0], stats[1][0])
    for r0, r1 in zip(stats[0][1], stats[1][1]):
        assert r0["mean_distance"] == pytest.approx(r1["mean_distance"]) and r0["entropy"] == pytest.approx(r1["entropy"])


def test_attention_recorder_against_an_explicit_softmax():
    from posbench.evaluation.diagnostics import AttentionRecorder

    torch.manual_seed(0)
    B, H, L, D = 2, 3, 50, 8
    q, k = torch.randn(B, H, L, D), torch.randn(B, H, L, D)
    slopes = torch.tensor([0.5, 0.25, 0.125])
    bias_fn = lambda i, j: -slopes[:, None, None] * (i[:, None] - j[None, :]).clamp(min=0)  # noqa: E731
    rec = AttentionRecorder(1, H)
    import posbench.evaluation.diagnostics as diag

    old, diag.MAX_ELEMENTS = diag.MAX_ELEMENTS, B * H * L * 7  # force several query blocks
    try:
        rec.add(0, q, k, 0.3, bias_fn, torch.arange(L))
    finally:
        diag.MAX_ELEMENTS = old
    s = q @ k.transpose(-1, -2) * 0.3 + bias_fn(torch.arange(L), torch.arange(L))
    s = s.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    p = s.softmax(-1)
    dist = (torch.arange(L)[:, None] - torch.arange(L)[None, :]).clamp(min=0)
    want_d = (p * dist).sum(-1).mean(dim=(0, 2))
    want_h = -(p * torch.log(p.clamp_min(1e-30))).sum(-1).mean(dim=(0, 2))
    got = pd.DataFrame(rec.records())
    assert np.allclose(got["mean_distance"], want_d.numpy(), rtol=1e-4)
    assert np.allclose(got["entropy"], want_h.numpy(), rtol=1e-4)


def test_a_model_without_positions_attends_uniformly_to_identical_tokens():
    """NoPE on a constant input: every query sees identical keys, so attention is uniform:
    distance (L - 1) / 4 and entropy ln(i + 1) averaged over queries."""
    from posbench.evaluation.diagnostics import attention_stats, uniform_entropy
    from posbench.model.transformer import ModelConfig, build_model

    model = build_model(ModelConfig(name="tiny", d_model=32, n_layers=2, n_heads=2), "nope", {}, 16).eval()
    stats = attention_stats(model, [torch.full((1, 40), 7)], torch.device("cpu"))
    assert len(stats) == 4
    for r in stats:
        assert r["mean_distance"] == pytest.approx(39 / 4, rel=1e-4)
        assert r["entropy"] == pytest.approx(uniform_entropy(40), rel=1e-4)


@pytest.mark.parametrize("mixers,layers", [(["gdn", "attention"], {1}), (["mamba2"], set())])
def test_a_recurrent_layer_has_no_attention_diagnostics_and_the_attention_layers_keep_theirs(mixers, layers):
    """Attention distance and entropy describe attention weights: a recurrent layer has none (no
    record), a hybrid's attention layers are measured as in any model."""
    from posbench.evaluation.diagnostics import attention_stats
    from posbench.model.transformer import build_model

    torch.manual_seed(0)
    cfg = ModelConfig(name="t", d_model=16, n_layers=2, n_heads=2, mixers=mixers, mixer_params={})
    model = build_model(cfg, "nope", {}, 16).eval()
    records = attention_stats(model, [torch.randint(0, 256, (2, 32))], torch.device("cpu"))
    assert {r["layer"] for r in records} == layers
