"""posbench/attention/rope_scalings.py: llama3, longrope, abf, drope and PoSE as scalings and
extension methods, with their roles and their frequencies at toy scale (parity with HF:
test_rope_parity.py)."""

import math

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import (
    ROPE_SCALINGS,
    llama3_bands,
    plain_frequencies,
)
from posbench.model.transformer import ModelConfig, build_model

TINY = ModelConfig(name="tiny", d_model=64, n_layers=2, n_heads=2)


@pytest.mark.parametrize("kind", ["llama3", "longrope", "abf", "drope", "pose", "pose_yarn"])
def test_new_types_are_registered_with_their_roles(kind):
    k = ROPE_SCALINGS.get(kind)
    from posbench.evaluation.variants.rope_scaling import evaluable_scalings
    from posbench.training.extend import extend_methods

    assert kind in extend_methods()
    assert (kind in evaluable_scalings()) == (kind not in ("pose", "pose_yarn"))
    assert k.finetune_at_train_len == (kind in ("drope", "pose", "pose_yarn"))


def test_llama3_at_toy_scale_keeps_interpolates_and_ramps_bands():
    """L_orig = train_len 64, factors 1 and 4: wavelengths below 16 kept, above 64 interpolated."""
    inv, scale = ROPE_SCALINGS.get("llama3").compute(32, 10000.0, 4.0, 64, 256)
    plain = plain_frequencies(32, 10000.0)
    wavelen = 2 * math.pi / plain
    assert torch.equal(inv[wavelen < 16], plain[wavelen < 16])
    torch.testing.assert_close(inv[wavelen > 64], plain[wavelen > 64] / 4)
    assert llama3_bands(32, 10000.0, 64) == {"kept": 2, "ramped": 3, "interpolated": 11}
    assert scale == 1.0
    torch.testing.assert_close(ROPE_SCALINGS.get("llama3").compute(32, 10000.0, 1.0, 64, 64)[0], plain)


def test_abf_and_drope():
    inv, _ = ROPE_SCALINGS.get("abf").compute(32, 10000.0, 4.0, 64, 256)
    torch.testing.assert_close(inv, plain_frequencies(32, 500000.0))
    inv, scale = ROPE_SCALINGS.get("drope").compute(32, 10000.0, 4.0, 64, 256)
    assert torch.equal(inv, torch.zeros(16, dtype=torch.float64)) and scale == 1.0


def test_a_drope_model_ignores_positions():
    """Frequencies 0: cos 1, sin 0; the logits no longer depend on where tokens are (RoPE's do)."""
    torch.manual_seed(0)
    model = build_model(TINY, "rope", {}, 16).eval()
    x = torch.randint(0, 256, (2, 32))
    spread = torch.sort(torch.randperm(500)[:32]).values
    with torch.no_grad():
        drope = AttentionOptions(rope=("drope", 1.0))
        assert torch.allclose(model(x, None, drope), model(x, spread, drope), atol=1e-5)
        assert not torch.allclose(model(x), model(x, spread), atol=1e-3)
