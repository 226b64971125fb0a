"""issue 25's RoPE family: llama3, longrope (and its factor search), abf, drope, PoSE as scalings and
extension methods; p_rope; ReRoPE, SelfExtend and DCA as evaluation variants (against literal
full-matrix versions of their reference code)."""

import json
import math

import pytest
import torch

from posbench.attention.kernels import piecewise_rotary_attention
from posbench.attention.options import AttentionOptions
from posbench.attention.positions import pose_positions
from posbench.attention.rope_scalings import (
    ROPE_SCALINGS,
    llama3_bands,
    plain_frequencies,
)
from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, build_encoding
from posbench.encodings.rope import apply_rotation, rotation_tables
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.variants import make_variant, rows
from posbench.jobs.train import run
from posbench.model.transformer import ModelConfig, build_model
from posbench.store.rundir import read_metrics

TINY = ModelConfig(name="tiny", d_model=64, n_layers=2, n_heads=2)
BASE = ["model=tiny", "train=smoke", "train_len=16", "eval.protocols=[nonoverlapping]", "eval.multiples=[1,4]",
        "eval.scored_tokens=256", "data=local"]


# -- scalings ---------------------------------------------------------------------------------------

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


# -- LongRoPE ----------------------------------------------------------------------------------------

@pytest.fixture
def table(tmp_path, monkeypatch):
    from posbench.attention import longrope

    path = tmp_path / "factors.json"
    monkeypatch.setattr(longrope, "TABLE", path)
    return path


def test_longrope_without_searched_factors_is_refused_in_one_line(table, compose, tmp_path):
    from posbench.attention.longrope import missing_reason

    reason = missing_reason(32, 10000.0, 16, 4.0)
    assert "no searched LongRoPE factors for head dimension 32, base 10000, train_len 16, factor 4" in reason
    assert "python -m posbench.jobs.longrope_search <run_dir> --factor 4 --write" in reason
    with pytest.raises(PosbenchError, match="extend.method=longrope: no searched LongRoPE factors"):
        compose(*BASE, "encoding=rope", "extend.length=64", "extend.method=longrope", f"runs_dir={tmp_path}").check()
    # at evaluation: the row has no score, with that reason (not a failed evaluation)
    enc = build_encoding("rope", ModelShape(64, 2, 2, 16))
    (row,) = [r for r in rows(enc, EvalConfig(rope_scaling=["longrope"], multiples=[1, 4])) if "longrope" in r.name]
    assert row.name == "rope+longrope@4x" and row.undefined_reason(enc, 64) == reason


def test_longrope_reads_the_table_and_switches_at_the_training_length(table):
    from posbench.attention.longrope import table_key
    from posbench.jobs.longrope_search import write_entry

    long = [1.0 + 0.1 * i for i in range(16)]
    write_entry(table_key(32, 10000.0, 16, 4.0), {"long_factor": long, "short_factor": [1.0] * 16})
    with pytest.raises(PosbenchError, match="already holds d32_base10000_L16_x4"):
        write_entry(table_key(32, 10000.0, 16, 4.0), {"long_factor": long, "short_factor": [1.0] * 16})
    compute = ROPE_SCALINGS.get("longrope").compute
    inv, scale = compute(32, 10000.0, 4.0, 16, 64)
    torch.testing.assert_close(inv, plain_frequencies(32, 10000.0) / torch.tensor(long, dtype=torch.float64))
    assert scale == pytest.approx(1 + math.log(4) / math.log(16))
    short, _ = compute(32, 10000.0, 4.0, 16, 16)
    torch.testing.assert_close(short, plain_frequencies(32, 10000.0))


def test_the_factor_search_improves_on_its_yarn_start(table):
    from posbench.attention.longrope import yarn_init
    from posbench.jobs.longrope_search import search_factors

    torch.manual_seed(0)
    model = build_model(TINY, "rope", {}, 16)
    tokens = (torch.arange(4000) * 7 % 251).numpy().astype("uint8")
    budget = {"population": 4, "iterations": 2, "mutations": 2, "crossovers": 2, "parents": 2, "windows": 2,
              "heldout_windows": 2}
    entry = search_factors(model, tokens, 16, 4.0, budget=budget)
    f = entry["long_factor"]
    assert len(f) == 16 and all(1.0 <= v <= 4.0 + 1e-9 for v in f) and f == sorted(f)
    s = entry["search"]
    assert s["best_loss"] <= min(s["init_loss"].values()) and s["evaluations"] <= 4 + 2 * 4 and s["window_tokens"] == 64
    assert len(s["init_loss"]) == 2  # the reference's start (YaRN mixed in factor space) and YaRN's own frequencies
    assert all(map(math.isfinite, s["heldout_init_loss"].values())) and math.isfinite(s["heldout_best_loss"])  # on windows not searched
    assert yarn_init(32, 10000.0, 16, 4.0)[0] == pytest.approx(1.0) and yarn_init(32, 10000.0, 16, 4.0)[-1] == 4.0
    assert not hasattr(model.encoding, "frequencies") or "frequencies" not in vars(model.encoding)


def test_the_tests_never_write_the_committed_table(table):
    from posbench.attention import longrope

    assert longrope.TABLE == table and longrope.read_table() == {}
    committed = json.loads((__import__("pathlib").Path(longrope.__file__).with_name("longrope_factors.json")).read_text())
    assert set(committed) == {"d32_base10000_L64_x4", "d32_base10000_L64_x16"}


def test_the_committed_factors_fit_the_presets():
    """rope_extension evaluates longrope at 16x, extension fine-tunes with it at 4x (small: head dimension 32)."""
    from posbench.attention.longrope import TABLE, table_key

    table = json.loads(TABLE.read_text())
    for factor in (4.0, 16.0):
        entry = table[table_key(32, 10000.0, 64, factor)]
        f = entry["long_factor"]
        assert len(f) == 16 and f == sorted(f) and 1 <= f[0] and f[-1] <= factor + 1e-9
        search = entry["search"]
        assert search["best_loss"] <= min(search["init_loss"].values())
        assert search["heldout_best_loss"] < min(search["heldout_init_loss"].values())  # better than its starts, held out


# -- PoSE and DroPE as extension methods --------------------------------------------------------------

def test_pose_positions_skip_within_the_target():

    seen_skips = set()
    for step in range(50):
        p = pose_positions(64, 256, 0, step)
        assert len(p) == 64 and p[0] == 0 and torch.all(p[1:] > p[:-1]) and p[-1] < 256
        jumps = torch.nonzero(p[1:] - p[:-1] != 1)
        assert len(jumps) <= 1 and (len(jumps) == 0 or jumps[0, 0] + 1 <= 32)  # the first chunk: 1..32 tokens
        seen_skips.add(int(p[-1] - 63))
    assert torch.equal(pose_positions(64, 256, 0, 3), pose_positions(64, 256, 0, 3))
    assert max(seen_skips) > 100 and min(seen_skips) >= 0


def test_pose_and_drope_fine_tune_at_the_training_length(compose, tmp_path, text_corpus):
    from posbench.training import extend

    args = ["encoding=rope", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    pose = compose(*args, "extend.length=64", "extend.method=pose", "extend.steps=4", "extend.lr=1e-3")
    assert extend.finetune_window(pose) == 16 and extend.finetune_settings(pose).batch_size == 8
    assert torch.equal(extend.training_positions(pose)(2), __import__("posbench.evaluation.variants.pose", fromlist=["x"]).pose_positions(16, 64, 0, 2))
    child = read_metrics(run(pose))
    assert child["train_steps"] == 4 and child["train_tokens"] == 4 * 8 * 16  # windows of 16, as the parent's
    assert {r["variant"] for r in child["evaluations"]} == {"rope+pose@4x+ft4"}
    drope = compose(*args, "extend.length=64", "extend.method=drope", "extend.steps=2", "extend.lr=1e-3")
    assert extend.training_positions(drope) is None and extend.finetune_window(drope) == 16
    assert {r["variant"] for r in read_metrics(run(drope))["evaluations"]} == {"rope+drope@4x+ft2"}
    yarn = compose(*args, "extend.length=64", "extend.method=yarn", "extend.steps=2")
    assert extend.finetune_window(yarn) == 64 and extend.training_positions(yarn) is None


def test_pose_is_no_evaluation_row(compose):
    with pytest.raises(PosbenchError, match="unknown eval.rope_scaling 'pose'; valid: linear, ntk, dynamic_ntk, yarn, "
                                            "llama3, longrope, abf, drope"):
        compose("encoding=rope", "eval.rope_scaling=[pose]").check()


# -- p_rope -----------------------------------------------------------------------------------------

def test_p_rope_at_fraction_one_is_rope_and_at_zero_ignores_positions():
    x = torch.randint(0, 256, (2, 24))
    torch.manual_seed(0)
    rope = build_model(TINY, "rope", {}, 16).eval()
    for mode in ("truncate", "neox"):
        torch.manual_seed(0)
        full = build_model(TINY, "p_rope", {"fraction": 1.0, "mode": mode}, 16).eval()
        with torch.no_grad():
            assert torch.allclose(full(x), rope(x), atol=1e-6)
        torch.manual_seed(0)
        none = build_model(TINY, "p_rope", {"fraction": 0.0, "mode": mode}, 16).eval()
        with torch.no_grad():
            assert torch.allclose(none(x), none(x, torch.arange(24) * 5 + 3), atol=1e-5)


def test_p_rope_neox_rotates_only_its_first_channels():
    enc = build_encoding("p_rope", ModelShape(64, 2, 1, 16), {"fraction": 0.25, "mode": "neox"})
    q = torch.randn(1, 2, 8, 32)
    state = enc.prepare(torch.arange(8) + 5, AttentionOptions())
    rq, _ = enc.rotate(q, q, state)
    assert enc.rotary_dim == 8 and torch.equal(rq[..., 8:], q[..., 8:]) and not torch.allclose(rq[..., :8], q[..., :8])
    trunc = build_encoding("p_rope", ModelShape(64, 2, 1, 16), {"fraction": 0.25})
    inv, _ = trunc.frequencies(AttentionOptions(), 16)
    assert torch.count_nonzero(inv) == 4 and torch.equal(inv[:4], plain_frequencies(32, 10000.0)[:4])


@pytest.mark.parametrize("params, message", [({"mode": "half"}, "encoding.mode='half'; valid: truncate, neox"),
                                             ({"fraction": 1.5}, "encoding.fraction=1.5 must be in [0, 1]")])
def test_p_rope_settings_are_checked(params, message):
    with pytest.raises(PosbenchError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build_encoding("p_rope", ModelShape(64, 2, 1, 16), params)


# -- training-free extenders --------------------------------------------------------------------------

def _rot(x, pos, inv):
    cos, sin = rotation_tables(pos, inv)
    return apply_rotation(x, cos, sin)


def literal(q, k, v, inv, pieces_full, scale):
    """Full-matrix attention as the reference patches compute it: every piece's L x L logits, merged
    with torch.where (later pieces win where their mask holds), causal mask, softmax."""
    L = q.shape[-2]
    logits = None
    for qpos, kpos, mask in pieces_full:
        s = _rot(q, qpos, inv) @ _rot(k, kpos, inv).transpose(-1, -2)
        logits = s if logits is None else torch.where(mask, s, logits)
    logits = (logits * scale).masked_fill(torch.ones(L, L).triu(1).bool(), float("-inf"))
    return logits.softmax(-1) @ v


def test_rerope_selfextend_dca_match_their_reference_formulas():
    torch.manual_seed(0)
    L, T = 96, 16
    q, k, v = (torch.randn(2, 2, L, 32) for _ in range(3))
    enc = build_encoding("rope", ModelShape(64, 2, 1, T))
    inv = plain_frequencies(32, 10000.0)
    pos = torch.arange(L)
    i, j = pos[:, None], pos[None, :]
    opts = AttentionOptions()
    # ReRoPE, w = 4, log-n on q (bojone/rerope rerope_patch.py)
    w = T // 4
    qs = q * ((pos + 1).double().log() / math.log(T)).clamp(min=1).float()[:, None]
    ref = literal(qs, k, v, inv, [(torch.full_like(pos, w), torch.zeros_like(pos), None), (pos, pos, (i - j).abs() < w)],
                  32 ** -0.5)
    got = make_variant("rerope").attend(q, k, v, enc, pos, opts, train_len=T)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)
    # SelfExtend, W = 4, G = ceil((96 - 4) / (16 - 4)) = 8 (datamllab/LongLM self_extend_patch/Llama.py)
    W, G = 4, 8
    gq, gk = pos // G + W - W / G, pos // G
    neighbour = torch.tril(torch.ones(L, L))
    neighbour[W:, :-W] -= torch.tril(torch.ones(L - W, L - W))
    ref = literal(q, k, v, inv, [(gq, gk, None), (pos, pos, neighbour.bool())], 32 ** -0.5)
    se = make_variant("selfextend")
    assert se.sizes(L, T) == (W, G) and se.sizes(T, T) == (W, 1)
    torch.testing.assert_close(se.attend(q, k, v, enc, pos, opts, train_len=T), ref, rtol=1e-4, atol=1e-5)
    # DCA, chunk_size 12, local_window 2: chunks of 10 (HKUNLP/ChunkLlama chunkllama_attn_replace.py)
    cs, lw = 12, 2
    c = cs - lw
    ch, inner = pos // c, pos % c
    mscale = 0.05 * math.log(L / T) + 1
    ref = literal(q, k, v, inv, [(torch.full_like(pos, min(2 * c - 1, cs)), inner, None),
                                 ((inner + c).clamp(max=cs), inner, ch[None, :] == ch[:, None] - 1),
                                 (inner, inner, ch[None, :] == ch[:, None])], 32 ** -0.5 * mscale ** 2)
    dca = make_variant("dca")
    assert dca.sizes(T) == (cs, lw)
    torch.testing.assert_close(dca.attend(q, k, v, enc, pos, opts, train_len=T), ref, rtol=1e-4, atol=1e-5)


def test_the_piecewise_kernel_is_the_same_in_query_blocks():
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, 2, 40, 16) for _ in range(3))
    inv = plain_frequencies(16, 10000.0)
    pos = torch.arange(40)
    pieces = [(torch.full_like(pos, 5), torch.zeros_like(pos), None), (pos, pos, lambda i, j: i - j < 5)]
    rotate = lambda x, p: _rot(x, p, inv)  # noqa: E731
    whole = piecewise_rotary_attention(q, k, v, rotate, pieces, 0.25)
    blocks = piecewise_rotary_attention(q, k, v, rotate, pieces, 0.25, max_elements=4 * 2 * 40)  # 7 query blocks
    torch.testing.assert_close(blocks, whole)


def test_extenders_are_plain_rope_where_they_change_nothing_and_rows_for_rope_only():
    torch.manual_seed(0)
    model = build_model(TINY, "rope", {}, 16).eval()
    x = torch.randint(0, 256, (2, 48))
    with torch.no_grad():
        plain = model(x)
        for name, params in [("rerope", {"window": 48, "logn": False}), ("selfextend", {"group": 1}),
                             ("dca", {"chunk_size": 60, "local_window": 0, "mscale": False})]:
            v = make_variant(name, params)
            torch.testing.assert_close(model(x, None, v.options(AttentionOptions(), 48, 16)), plain, rtol=1e-4, atol=1e-5)
    ev = EvalConfig(multiples=[1, 4], variants=["rerope", "selfextend", "dca", {"name": "rerope", "window": 8}])
    assert [r.name for r in rows(model.encoding, ev)] == ["rope", "rope+rerope", "rope+selfextend", "rope+dca", "rope+reropew8"]
    alibi = build_encoding("alibi", ModelShape(64, 2, 2, 16))
    assert [r.name for r in rows(alibi, ev)] == ["alibi"]
