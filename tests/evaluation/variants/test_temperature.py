"""The evaluation-time attention temperature (any encoding): every attention logit, content and
position terms alike, is multiplied by t = 1 + c ln(L / train_len)."""

import copy
import math

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.evaluation.perplexity import evaluate_model
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import base_variant, make_variant, temperature_of
from posbench.model.transformer import ModelConfig, build_model
from posbench.evaluation.resolved import ResolvedEval

CFG = ModelConfig(d_model=32, n_layers=2, n_heads=2, mlp_ratio=2, dropout=0.0, vocab_size=256)


def _scaled_queries_twin(model, t: float):
    """The same model with every logit multiplied by t by hand: W_q x t (q.k and q.rel terms),
    Transformer-XL's u and v x t, and each bias x t."""
    twin = copy.deepcopy(model)
    enc = twin.encoding
    with torch.no_grad():
        for block in twin.blocks:
            block.attn.qkv.weight[: CFG.d_model] *= t
        if enc.name == "transformer_xl":
            enc.u *= t
            enc.v *= t
    if enc.uses_bias:
        plain = enc.bias
        enc.bias = lambda i, j, layer: plain(i, j, layer) * t
    return twin


@pytest.mark.parametrize("name", ["nope", "rope", "alibi", "kerple_log", "fire", "t5", "shaw", "transformer_xl"])
def test_temperature_multiplies_every_logit(name):
    torch.manual_seed(0)
    model = build_model(CFG, name, {}, train_len=16).eval()
    with torch.no_grad():  # peakier attention than at initialisation, so that a temperature shows
        for block in model.blocks:
            block.attn.qkv.weight *= 4
    x = torch.randint(0, 256, (2, 64))
    options = make_variant("temperature", {"c": 0.3}).options(AttentionOptions(), 64, 16)
    t = options.logit_scale
    assert t == pytest.approx(1 + 0.3 * math.log(4))
    twin = _scaled_queries_twin(model, t).eval()
    with torch.no_grad():
        got = model(x, None, options)
        want = twin(x)
        plain = model(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert (got - plain).abs().max() > 1e-2  # it does something


def test_temperature_rows_leave_1x_alone_and_reset(tmp_path):
    torch.manual_seed(0)
    model = build_model(CFG, "alibi", {}, train_len=16)
    val = torch.randint(0, 256, (6000,)).numpy().astype("uint8")
    eval_cfg = EvalConfig(multiples=[1, 4], protocols=["nonoverlapping"], scored_tokens=512, target_docs=4,
                          batch_tokens=4096, bca=[], temperature=[0.1, 0.0])
    records, _ = evaluate_model(model, ResolvedEval(eval_cfg, 16, text=val), torch.device("cpu"), progress=False)
    ppl = {(r["variant"], r["multiple"]): r["ppl"] for r in records}
    assert ppl["alibi+temp0.1", 1] == ppl["alibi", 1]  # s = 1: nothing changes at the training length
    assert ppl["alibi+temp0", 4] == ppl["alibi", 4]
    assert ppl["alibi+temp0.1", 4] != ppl["alibi", 4]
    assert not hasattr(model.encoding, "logit_scale")  # rows never change the model: options per forward


def test_variant_names():
    assert temperature_of("rope+yarn@16x+temp0.1") == 0.1 and temperature_of("rope+yarn@16x") is None
    assert base_variant("alibi+temp0.05") == "alibi" and base_variant("xpos+bca") == "xpos"


def test_the_logit_scale_is_one_up_to_train_len_and_one_plus_c_ln_s_beyond():
    from posbench.core.errors import PosbenchError
    from posbench.evaluation.variants.temperature import Temperature, logit_scale

    assert logit_scale(0.1, 8, 16) == logit_scale(0.1, 16, 16) == 1.0
    assert logit_scale(0.1, 64, 16) == pytest.approx(1 + 0.1 * math.log(4))
    t = make_variant("temperature", {"c": 0.5})
    assert isinstance(t, Temperature) and t.suffix() == "+temp0.5"
    assert t.options(AttentionOptions(logit_scale=2.0), 64, 16).logit_scale == pytest.approx(2 * (1 + 0.5 * math.log(4)))
    with pytest.raises(PosbenchError, match=r"coefficients c in \[0, 10\]"):
        make_variant("temperature", {"c": 11})
