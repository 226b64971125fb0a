"""Each encoding against its reference formula and code, computed here independently (not against
itself): values at several distances, heads and lengths, initial-value ranges, parameter sharing,
and that a constrained parameter at its bound still learns."""

import math

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from posbench.attention.options import AttentionOptions
from posbench.encodings import ModelShape, build_encoding
from posbench.evaluation.settings import EvalConfig
from posbench.model.transformer import ModelConfig, build_model


def nemo_sandwich(distance: int, head: int, n_heads: int, d: int) -> float:
    """NeMo's SandwichRelativePositionEmbedding for one (distance, head), head counted from 1."""
    total = sum(math.cos(distance / 10000 ** (2 * k / d)) for k in range(1, d // 2 + 1))
    return (total - d / 2) / (head * 8 / n_heads)


@pytest.mark.parametrize("d_model, n_heads", [(32, 4), (64, 2), (128, 8)])
def test_sandwich_matches_nemo(d_model, n_heads):
    enc = build_encoding("sandwich", ModelShape(d_model, n_heads, 2, 16))
    dists = [0, 1, 3, 17, 63, 500]
    b = enc.bias(torch.tensor([600]), torch.tensor([600 - d for d in dists]), 0)[:, 0]  # [H, len(dists)]
    for h in range(n_heads):
        for i, dist in enumerate(dists):
            assert b[h, i].item() == pytest.approx(nemo_sandwich(dist, h + 1, n_heads, d_model // n_heads), abs=1e-4)


def test_kerple_log_matches_the_official_formula_and_init():
    torch.manual_seed(0)
    enc = build_encoding("kerple_log", ModelShape(64, 64, 3, 16))  # many heads: the ranges show
    p, a = enc.r1.detach(), enc.r2.detach()
    assert p.shape == (64,) and 1.0 < p.max() <= 2.0 and a.max() <= 1.0  # p ~ U(0, 2), a ~ U(0, 1)
    assert sum(x.numel() for x in enc.parameters()) == 2 * 64  # one set, shared by the 3 layers
    b = enc.bias(torch.tensor([50]), torch.tensor([50, 49, 40, 0]), 2)[:, 0]
    p, a = p.clamp(min=0.01), a.clamp(min=0.01)
    for i, dist in enumerate([0, 1, 10, 50]):
        assert torch.allclose(b[:, i], -p * torch.log(1 + a * dist), atol=1e-5)
    assert torch.equal(b, enc.bias(torch.tensor([50]), torch.tensor([50, 49, 40, 0]), 0)[:, 0])  # same in every layer


def test_kerple_power_matches_the_official_formula_and_init():
    torch.manual_seed(0)
    enc = build_encoding("kerple_power", ModelShape(64, 64, 2, 16))
    a, p = enc.r1.detach().clamp(min=0.01), enc.r2.detach().clamp(0.01, 2)
    assert a.max() <= 1.0 and 1.0 < p.max() <= 2.0  # a ~ U(0, 1), p ~ U(0, 2)
    b = enc.bias(torch.tensor([50]), torch.tensor([50, 49, 40, 0]), 1)[:, 0]
    for i, dist in enumerate([0, 1, 10, 50]):
        assert torch.allclose(b[:, i], -a * dist ** p, atol=1e-4)


@pytest.mark.parametrize("name", ["kerple_log", "kerple_power"])
def test_a_kerple_parameter_at_its_bound_is_projected_and_still_learns(name):
    enc = build_encoding(name, ModelShape(16, 2, 1, 16))
    with torch.no_grad():
        enc.r1.fill_(-0.5)  # where an optimiser step could push it
        enc.r2.fill_(5.0 if name == "kerple_power" else -1.0)
    b = enc.bias(torch.arange(8), torch.arange(8), 0)
    assert (enc.r1 >= 0.01).all() and (enc.r2 >= 0.01).all()
    if name == "kerple_power":
        assert (enc.r2 <= 2.0).all()
    b.sum().backward()
    assert (enc.r1.grad.abs() > 0).all() and (enc.r2.grad.abs() > 0).all()  # no dead gradient at the bound


def test_fire_matches_the_paper_formula_and_its_normaliser_varies_in_training():
    train_len = 64
    enc = build_encoding("fire", ModelShape(32, 4, 1, train_len))
    layer = enc.layers[0]
    L, c = layer.threshold().item(), layer.c.item()
    assert L == 16
    q, k = torch.arange(train_len), torch.arange(train_len)
    got = enc.bias(q, k, 0)
    for i, j in [(5, 2), (20, 3), (63, 0), (40, 39)]:
        x = math.log(c * (i - j) + 1) / (math.log(c * max(L, i) + 1) + 1e-6)
        expected = layer.mlp(torch.tensor([[x]], dtype=torch.float32))[0]
        assert torch.allclose(got[:, i, j], expected, atol=1e-5)
    # progressive interpolation is at work within the training length: the same distance maps to
    # different inputs for queries past L
    norms = {i: math.log(c * max(L, i) + 1) for i in range(train_len)}
    assert len({round(v, 6) for v in norms.values()}) > train_len // 2


def test_t5_every_bucket_used_in_evaluation_is_trained():
    from posbench.core.errors import PosbenchError
    from posbench.encodings.t5 import relative_position_bucket

    for train_len in (16, 64, 128):
        enc = build_encoding("t5", ModelShape(32, 4, 2, train_len))
        trained = set(relative_position_bucket(-torch.arange(train_len), True, enc.num_buckets, enc.max_distance).tolist())
        evaluated = set(relative_position_bucket(-torch.arange(16 * train_len), True, enc.num_buckets, enc.max_distance).tolist())
        assert evaluated <= trained == set(range(enc.num_buckets))
    with pytest.raises(PosbenchError, match="reach only buckets 0..26 of 32"):
        build_encoding("t5", ModelShape(32, 4, 2, 64), {"max_distance": 128})


def test_xpos_scale_base_follows_the_training_length_and_the_formula():
    train_len, d = 64, 8
    enc = build_encoding("xpos", ModelShape(4 * d, 4, 1, train_len))
    plain = build_encoding("rope", ModelShape(4 * d, 4, 1, train_len))
    assert enc.scale_base == train_len / 2  # the paper: 512 at 1024
    torch.manual_seed(0)
    q, k = torch.randn(1, 4, 100, d, dtype=torch.float64), torch.randn(1, 4, 100, d, dtype=torch.float64)
    pos = torch.arange(100)
    qx, kx = enc.rotate(q.float(), k.float(), enc.prepare(pos, AttentionOptions()))
    qr, kr = plain.rotate(q.float(), k.float(), plain.prepare(pos, AttentionOptions()))
    zeta = (torch.arange(0, d, 2, dtype=torch.float64) / d + 0.4) / 1.4
    for n, m in [(10, 3), (99, 0), (50, 50)]:
        got = (qx[0, :, n] * kx[0, :, m]).double()
        ref = (qr[0, :, n] * kr[0, :, m]).double() * torch.cat([zeta, zeta]) ** ((n - m) / (train_len / 2))
        assert torch.allclose(got.sum(-1), ref.sum(-1), atol=1e-4)


def test_transformer_xl_u_v_start_like_the_authors_weights():
    torch.manual_seed(0)
    enc = build_encoding("transformer_xl", ModelShape(128, 8, 2, 16))
    for p in (enc.u, enc.v):
        assert p.shape == (8, 16) and p.std().item() == pytest.approx(0.02, rel=0.2)


def test_every_encoding_trains_at_the_model_learning_rate_by_default():
    from pathlib import Path

    from posbench.cli.config import CONF_DIR

    for f in (Path(CONF_DIR) / "encoding").glob("*.yaml"):
        assert "lr_mult" not in OmegaConf.load(f), f"{f.name} gives its encoding a private learning rate"


# -- evaluation-only variants -------------------------------------------------------------------


def test_blockwise_causal_attention_hides_keys_before_the_previous_block():
    from posbench.attention.kernels import future_mask

    m = future_mask(0, 12, "cpu", block=4)
    for i in range(12):
        visible = [j for j in range(12) if not m[i, j]]
        assert visible == list(range(max(0, (i // 4 - 1) * 4), i + 1))
    torch.manual_seed(0)
    cfg = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4, mlp_ratio=2)
    for name in ("xpos", "alibi", "shaw", "nope"):
        model = build_model(cfg, name, {}, 16).eval()
        bca = AttentionOptions(block=8)
        x = torch.randint(0, 256, (1, 64))
        y = x.clone()
        y[0, :8] = (y[0, :8] + 1) % 256  # far past of the last query: outside its two blocks in every layer
        with torch.no_grad():
            assert torch.allclose(model(x, None, bca)[0, -1], model(y, None, bca)[0, -1], atol=1e-6), name
            assert not torch.allclose(model(x)[0, -1], model(y)[0, -1], atol=1e-6), name


def test_evaluation_rows_for_bca_and_randomized_positions():
    from posbench.evaluation.perplexity import evaluate_model

    torch.manual_seed(0)
    cfg = ModelConfig(name="t", d_model=16, n_layers=1, n_heads=2, mlp_ratio=2)
    val = np.random.default_rng(0).integers(0, 256, 3000).astype(np.uint8)
    ev = EvalConfig(**dict(multiples=[1, 2, 8], protocols=["nonoverlapping"], scored_tokens=128, first_scored=128,
                               stride=None, target_tokens=None, target_docs=8, batch_tokens=256, rope_scaling=[],
                               rope_factor=None, bca=["xpos"]))
    xpos = build_model(cfg, "xpos", {}, 8)
    variants = {r["variant"] for r in evaluate_model(xpos, val, 8, ev, torch.device("cpu"), progress=False)[0]}
    assert variants == {"xpos", "xpos+bca"}
    learned = build_model(cfg, "learned", {}, 8, max_position=32)  # trained on positions sampled from [0, 32)
    records = evaluate_model(learned, val, 8, ev, torch.device("cpu"), progress=False)[0]
    by = {(r["variant"], r["length"]): r for r in records}
    assert by["learned+randpos", 16]["ppl"] is not None and by["learned+randpos", 64]["ppl"] is None
    assert by["learned", 16]["ppl"] is not None and by["learned+randpos", 16]["ppl"] != by["learned", 16]["ppl"]
