"""Parity with HF transformers' own RoPE functions (``transformers.modeling_rope_utils``) for every
scaling type posbench shares with HF: inverse frequencies and attention factors at several head sizes,
factors and training lengths. Skipped when transformers is not installed (it is in the ``test`` extra).

posbench multiplies the logits by its attention scale; HF multiplies cos and sin (so q and k) by its
attention_factor: posbench's scale is HF's factor squared. HF computes in float32, posbench in float64.
"""

import math

import pytest
import torch

transformers = pytest.importorskip("transformers")
from transformers import LlamaConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

from posbench.attention.options import AttentionOptions  # noqa: E402
from posbench.attention.rope_scalings import ROPE_SCALINGS, plain_frequencies  # noqa: E402
from posbench.encodings import ModelShape, build_encoding  # noqa: E402

HEAD_DIMS = [16, 32, 64, 128]
FACTORS = [2.0, 4.0, 16.0]
LENGTHS = [64, 4096]  # posbench's toy training length, and a real one
RTOL = 1e-5  # float32 (HF) against float64 (posbench)


def hf(rope_type: str, head_dim: int, train_len: int, params: dict, seq_len=None, max_position=None):
    """HF's (inv_freq, attention_factor) for a Llama config of this head size."""
    config = LlamaConfig(hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
                         max_position_embeddings=max_position or train_len,
                         rope_parameters={"rope_type": rope_type, "rope_theta": params.pop("rope_theta", 10000.0), **params})
    inv_freq, attention_factor = ROPE_INIT_FUNCTIONS[rope_type](config, "cpu", seq_len=seq_len)
    return inv_freq.double(), float(attention_factor)


def ours(kind: str, head_dim: int, factor: float, train_len: int, length: int, base: float = 10000.0, **options):
    inv_freq, scale = ROPE_SCALINGS.get(kind).compute(head_dim, base, factor, train_len, length, **options)
    return inv_freq, scale


def close(a, b):
    assert a.shape == b.shape
    torch.testing.assert_close(a, b, rtol=RTOL, atol=0)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("factor", FACTORS)
@pytest.mark.parametrize("train_len", LENGTHS)
def test_linear(head_dim, factor, train_len):
    inv, af = hf("linear", head_dim, train_len, {"factor": factor})
    mine, scale = ours("linear", head_dim, factor, train_len, int(factor * train_len))
    close(mine, inv)
    assert scale == af ** 2 == 1.0


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("multiple", [0.5, 1.0, 3.0, 16.0])
@pytest.mark.parametrize("train_len", LENGTHS)
def test_dynamic_ntk_is_hfs_dynamic_at_factor_one(head_dim, multiple, train_len):
    """posbench's dynamic_ntk is HF's ``dynamic`` with factor 1: base (L / L_train)^(d / (d - 2)). HF's
    factor f > 1 would use (f L / L_train - (f - 1)) instead (emozilla's dynamic NTK with its scale);
    posbench has no such factor (see docs/encodings.md)."""
    length = int(multiple * train_len)
    inv, af = hf("dynamic", head_dim, train_len, {"factor": 1.0}, seq_len=length)
    mine, scale = ours("dynamic_ntk", head_dim, max(1.0, length / train_len), train_len, length)
    close(mine, inv)
    assert scale == af == 1.0


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("factor", FACTORS)
def test_static_ntk_is_hfs_dynamic_at_the_target(head_dim, factor):
    """HF has no static NTK type; posbench's ntk at s equals HF's dynamic (factor 1) at s x L_train."""
    inv, _ = hf("dynamic", head_dim, 64, {"factor": 1.0}, seq_len=int(factor * 64))
    close(ours("ntk", head_dim, factor, 64, 64)[0], inv)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("factor", FACTORS)
@pytest.mark.parametrize("train_len", LENGTHS)
@pytest.mark.parametrize("options", [{}, {"beta_fast": 16, "beta_slow": 2}, {"attention_factor": 1.3},
                                     {"mscale": 1.0, "mscale_all_dim": 0.707}, {"mscale": 0.707, "mscale_all_dim": 1.0}])
def test_yarn(head_dim, factor, train_len, options):
    inv, af = hf("yarn", head_dim, train_len, {"factor": factor, "original_max_position_embeddings": train_len, **options},
                 max_position=int(factor * train_len))
    mine, scale = ours("yarn", head_dim, factor, train_len, int(factor * train_len), **options)
    close(mine, inv)
    assert scale == pytest.approx(af ** 2, rel=1e-12)
    if not options:
        assert scale == pytest.approx((0.1 * math.log(factor) + 1) ** 2, rel=1e-12)  # the paper's sqrt(1/t)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("factor", FACTORS)
@pytest.mark.parametrize("train_len", LENGTHS)
@pytest.mark.parametrize("low_high", [(1.0, 4.0), (2.0, 8.0), (0.5, 2.0)])
def test_llama3(head_dim, factor, train_len, low_high):
    low, high = low_high
    inv, af = hf("llama3", head_dim, train_len, {"factor": factor, "low_freq_factor": low, "high_freq_factor": high,
                                                  "original_max_position_embeddings": train_len},
                 max_position=int(factor * train_len))
    mine, scale = ours("llama3", head_dim, factor, train_len, int(factor * train_len), low_freq_factor=low,
                       high_freq_factor=high)
    close(mine, inv)
    assert scale == af == 1.0


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("factor", FACTORS)
@pytest.mark.parametrize("train_len", LENGTHS)
@pytest.mark.parametrize("attention_factor", [None, 1.2])
def test_longrope(head_dim, factor, train_len, attention_factor):
    g = torch.Generator().manual_seed(head_dim)
    long = sorted((1 + (factor - 1) * torch.rand(head_dim // 2, generator=g)).tolist())
    short = sorted((1 + 0.5 * torch.rand(head_dim // 2, generator=g)).tolist())
    opts = {"long_factor": long, "short_factor": short, "attention_factor": attention_factor}
    params = {"factor": factor, "original_max_position_embeddings": train_len,
              **{k: v for k, v in opts.items() if v is not None}}
    for length in (train_len, int(factor * train_len)):  # short factors up to L_train, long ones past it
        inv, af = hf("longrope", head_dim, train_len, dict(params), seq_len=length, max_position=int(factor * train_len))
        mine, scale = ours("longrope", head_dim, factor, train_len, length, **opts)
        close(mine, inv)
        assert scale == pytest.approx(af ** 2, rel=1e-12)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.75])
@pytest.mark.parametrize("kind", ["linear", "yarn", "llama3"])
def test_partial_rotary_factor(head_dim, fraction, kind):
    """HF's partial_rotary_factor computes a type for dim = int(head_dim x factor); p_rope's neox mode
    does the same (its rotary_dim)."""
    enc = build_encoding("p_rope", ModelShape(head_dim * 2, 2, 1, 64), {"fraction": fraction, "mode": "neox"})
    extra = {"yarn": {"original_max_position_embeddings": 64},
             "llama3": {"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}}[kind] \
        if kind != "linear" else {}
    inv, af = hf(kind, head_dim, 64, {"factor": 4.0, "partial_rotary_factor": fraction, **extra}, max_position=256)
    mine, scale = enc.frequencies(AttentionOptions(rope=(kind, 4.0)), 256)
    assert enc.rotary_dim == int(head_dim * fraction)
    close(mine, inv)
    assert scale == pytest.approx(af ** 2, rel=1e-12)


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("fraction", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_p_rope_is_hfs_proportional(head_dim, fraction):
    """p-RoPE (Barbero et al. 2025) keeps the highest frequencies and zeroes the rest: HF's
    ``proportional`` type with partial_rotary_factor p (factor 1)."""
    if "proportional" not in ROPE_INIT_FUNCTIONS:
        pytest.skip("this transformers has no proportional RoPE type")
    enc = build_encoding("p_rope", ModelShape(head_dim * 2, 2, 1, 64), {"fraction": fraction})
    inv, _ = hf("proportional", head_dim, 64, {"factor": 1.0, "partial_rotary_factor": fraction})
    mine, scale = enc.frequencies(AttentionOptions(), 64)
    close(mine, inv)
    assert scale == 1.0


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
def test_abf_is_hfs_default_rope_at_fifty_times_the_base(head_dim):
    """ABF has no HF type: HF raises rope_theta. 10,000 -> 500,000 as Xiong et al. 2023."""
    inv, _ = hf("linear", head_dim, 64, {"factor": 1.0, "rope_theta": 500000.0})
    close(ours("abf", head_dim, 4.0, 64, 256)[0], inv)
    close(ours("abf", head_dim, 4.0, 64, 256, base=2000.0)[0], plain_frequencies(head_dim, 100000.0))
