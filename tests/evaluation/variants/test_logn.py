"""The logn and floor-log rows (posbench/evaluation/variants/logn.py, floorlog.py): offered exactly
where they change the output, on the global layers only, never over a layer's own temperature."""

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.evaluation.variants import make_variant
from posbench.model.transformer import ModelConfig, build_model
from tests.helpers import attn_output, model_of

CFG = ModelConfig(name="t", d_model=32, n_layers=4, n_heads=4, mlp_ratio=2)


X = torch.Generator().manual_seed(1)


def test_logn_on_rnope_swa_scales_only_the_global_layers():
    """SWAN-GPT's inference scaling: the NoPE (global) layers, not the sliding-window ones."""
    model = model_of("rnope_swa")
    x = torch.randint(0, 256, (1, 48), generator=X)
    opts = make_variant("logn").options(AttentionOptions(), 48, 16)
    torch.testing.assert_close(attn_output(model, x, 0, opts), attn_output(model, x, 0))  # rope/swa layer
    assert not torch.allclose(attn_output(model, x, 3, opts)[:, 20:], attn_output(model, x, 3)[:, 20:])


def test_a_layers_own_temperature_wins_over_a_rows():
    """Rows add a temperature to layers without one: SSMax's layers and iRoPE's global layers keep theirs."""
    x = torch.randint(0, 256, (1, 48), generator=X)
    for name, layer in (("ssmax", 0), ("irope", 3)):
        model = model_of(name)
        opts = make_variant("logn").options(AttentionOptions(), 48, 16)
        torch.testing.assert_close(attn_output(model, x, layer, opts), attn_output(model, x, layer))


@pytest.mark.parametrize("name", sorted(__import__("posbench.encodings", fromlist=["available"]).available()))
def test_a_temperature_row_is_offered_exactly_where_it_changes_the_output(name):
    """logn / floor-log rows apply to an encoding iff the model's output changes under them: none for
    one whose layers all have a window or a temperature of their own (rope_swa, iRoPE, SSMax) or that
    attends through relative_attention (Shaw, Transformer-XL), whose row would equal the plain row."""
    from posbench.evaluation.settings import EvalConfig
    from posbench.evaluation.variants import rows

    torch.manual_seed(0)
    model = build_model(CFG, name, {}, 64).eval()  # a table of 64 positions (learned); the rows say train_len 16
    with torch.no_grad():  # logits far from 0, where a temperature shows (at init attention is near uniform)
        for p in [*model.encoding.parameters(), *(b.attn.qkv.weight for b in model.blocks)]:
            p.add_(torch.randn_like(p) * 0.3)
    x = torch.randint(0, 256, (1, 48), generator=X)
    offered = {r.name for r in rows(model.encoding, EvalConfig(variants=["logn", "floorlog"], bca=[]))}
    for variant in ("logn", "floorlog"):
        with torch.no_grad():
            row = model(x, None, make_variant(variant).options(AttentionOptions(), 48, 16))
            changes = not torch.equal(row, model(x))  # a row that does not apply is the plain row, bit for bit
        assert (f"{name}+{variant}" in offered) == changes, (name, variant, changes)


def test_the_logn_row_scales_queries_by_log_base_train_len_of_their_position():
    """Qwen's logn: max(1, log_{train_len} n) on each query."""
    from posbench.attention.temperatures import logn_scale
    from posbench.evaluation.variants.logn import LogN

    v = make_variant("logn")
    assert isinstance(v, LogN) and v.suffix() == "+logn"
    pos = torch.arange(300)
    scale = v.options(AttentionOptions(), 300, 16).query_scale(pos, pos + 1)
    torch.testing.assert_close(scale, logn_scale(pos, pos + 1, 16))
    assert torch.all(scale[:16] == 1) and scale[255].item() == pytest.approx(2.0)  # log_16 256
