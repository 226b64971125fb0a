"""The HeadScale row (posbench/evaluation/variants/headscale.py): per-layer, per-head temperatures on
the queries, fitted at each length past train_len on the training split with the model frozen."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.evaluation.resolved import ResolvedEval
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import make_variant
from posbench.evaluation.variants.headscale import HeadScales
from tests.helpers import attn_output, hf_visible, layer_inputs, model_of, naive

X = torch.Generator().manual_seed(1)
TEXT = np.random.default_rng(0).integers(97, 123, size=8000).astype(np.uint8)


def test_head_scales_multiply_each_layers_logits_per_head():
    """softmax(lambda_{l,h} q . k / sqrt(d)) v: HeadScales [layers, H] on a NoPE model, layer 2."""
    model = model_of("nope")
    L = 20
    x = torch.randint(0, 256, (2, L), generator=X)
    scales = torch.rand(4, 4, dtype=torch.float64) + 0.5
    _, q, k, v = layer_inputs(model, x, 2)
    y = naive(scales[2][None, :, None, None] * (q @ k.transpose(-1, -2)) / math.sqrt(8), v, hf_visible(None, None, L))
    got = attn_output(model, x, 2, AttentionOptions(query_scale=HeadScales(scales)))
    torch.testing.assert_close(got, model.blocks[2].attn.proj(y.transpose(1, 2).reshape(2, L, 32)))


def fit_eval(calibration, text=TEXT):
    return ResolvedEval(EvalConfig(multiples=[1, 4]), 16, text=text, calibration=calibration)


def window_loss(model, tokens, L, options=None):
    x = torch.from_numpy(tokens[:4 * L].astype(np.int64)).view(4, L)
    y = torch.from_numpy(tokens[1:4 * L + 1].astype(np.int64)).view(4, L)
    with torch.no_grad():
        return float(F.cross_entropy(model(x, None, options).flatten(0, 1), y.flatten()))


def test_the_fit_lowers_the_loss_at_its_length_reads_only_the_training_split_and_leaves_the_model_frozen():
    model = model_of("nope").float()
    weights = {n: p.detach().clone() for n, p in model.named_parameters()}
    v = make_variant("headscale", {"steps": 30, "batch": 2})
    calibration = np.random.default_rng(1).integers(97, 123, size=6000).astype(np.uint8)
    v.fit(model, fit_eval(calibration), 64, torch.device("cpu"))
    s = v.fitted[64]
    assert s.shape == (4, 4) and not torch.allclose(s, torch.ones(4, 4))
    assert all(torch.equal(p, weights[n]) and p.requires_grad for n, p in model.named_parameters())
    held_out = np.random.default_rng(2).integers(97, 123, size=2000).astype(np.uint8)  # neither text: generalises
    assert window_loss(model, held_out, 64, v.options(AttentionOptions(), 64, 16)) < window_loss(model, held_out, 64)
    # the scored text plays no part: another validation text, the same scales
    w = make_variant("headscale", {"steps": 30, "batch": 2})
    w.fit(model, fit_eval(calibration, text=TEXT[::-1].copy()), 64, torch.device("cpu"))
    torch.testing.assert_close(w.fitted[64], s)


def test_at_the_training_length_the_row_is_the_model_as_trained():
    v = make_variant("headscale")
    v.fit(model_of("nope"), fit_eval(None), 16, torch.device("cpu"))  # nothing to fit, nothing asked of the text
    assert v.fitted == {} and v.options(AttentionOptions(), 16, 16) == AttentionOptions()


def test_scoring_before_fitting_or_without_a_training_split_is_one_line():
    v = make_variant("headscale")
    with pytest.raises(PosbenchError, match=r"^\+headscale has no scales fitted at 64 tokens"):
        model_of("nope")(torch.randint(0, 256, (1, 64)), None, v.options(AttentionOptions(), 64, 16))
    with pytest.raises(PosbenchError, match=r"^\+headscale fits its scales at 64 tokens on the training split, which has 0 tokens"):
        v.fit(model_of("nope"), fit_eval(None), 64, torch.device("cpu"))


def test_the_nope_headscale_row_is_scored_at_every_length():
    from posbench.evaluation.perplexity import evaluate_model

    model = model_of("nope").float()
    ev = ResolvedEval(EvalConfig(multiples=[1, 4], protocols=["nonoverlapping"], scored_tokens=128, target_docs=4,
                                 batch_tokens=512, bca=[], variants=[{"name": "headscale", "steps": 5, "batch": 2}]),
                      16, text=TEXT[:3000], calibration=TEXT[3000:])
    records, _ = evaluate_model(model, ev, torch.device("cpu"), progress=False)
    got = {(r["variant"], r["length"]): r["ppl"] for r in records}
    assert set(got) == {(v, L) for v in ("nope", "nope+headscale") for L in (16, 64)}
    assert got["nope", 16] == got["nope+headscale", 16] and got["nope", 64] != got["nope+headscale", 64]
    assert all(math.isfinite(p) for p in got.values())
