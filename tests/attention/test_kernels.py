"""The attention paths of bias encodings agree with each other and are chosen where they should be."""

import pytest
import torch

from posbench.attention import kernels as attention
from posbench.attention.options import AttentionOptions
from posbench.model.transformer import ModelConfig, build_model


def test_flex_is_used_for_cpu_evaluation_at_long_lengths_only():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    if not attention.flex_supported():
        pytest.skip("flex attention not importable in this torch")
    assert not attention.use_flex(cpu, 4096, training=True)  # no flex backward on CPU
    assert not attention.use_flex(cpu, 128, training=False)  # compilation would cost more than it saves
    assert attention.use_flex(cpu, attention.FLEX_MIN_LEN_CPU, training=False)
    assert attention.use_flex(cuda, 128, training=True)
    assert not attention.use_flex(cuda, 4096, training=False, setting="chunked")
    assert attention.use_flex(cpu, 64, training=False, setting="flex")


@pytest.mark.parametrize("encoding", ["alibi", "kerple_log"])
def test_flex_attention_matches_the_chunked_float_mask_path(encoding):
    """Compiled flex attention (distance table in a score_mod, causal block mask) gives the same
    logits as SDPA with the float mask, and stays causal."""
    if not attention.flex_supported():
        pytest.skip("flex attention not importable in this torch")
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4, mlp_ratio=2), encoding, {}, 16, 16).eval()
    x = torch.randint(0, 256, (2, 128))
    with torch.no_grad():
        ref = model(x, None, AttentionOptions(kernel="chunked"))
        flex = AttentionOptions(kernel="flex")
        out = model(x, None, flex)
        assert attention._flex_state["broken"] is None, attention._flex_state["broken"]
        torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
        y = x.clone()
        y[:, 100:] = (y[:, 100:] + 1) % 256  # the future changes; the past must not see it
        torch.testing.assert_close(model(y, None, flex)[:, :100], out[:, :100], atol=1e-5, rtol=1e-5)
