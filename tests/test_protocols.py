"""Evaluation protocols: which tokens each scores, and that scoring matches a naive forward pass."""

import math

import numpy as np
import pytest
import torch


from posbench.errors import PosbenchError
from posbench.protocols import EvalConfig, check_eval, check_fits, document_targets, plan_windows, token_set


def eval_cfg(**kw):
    base = dict(multiples=[1, 2, 4], protocols=["nonoverlapping", "sliding", "fixed_target"], scored_tokens=128,
                first_scored=None, stride=None, target_tokens=4, target_docs=8, batch_tokens=256, rope_scaling=[],
                rope_factor=None)
    return EvalConfig(**{**base, **kw})


def scored_targets(plan, L):
    """Set of (target index, context tokens before it) for every scored token of a plan."""
    out = {}
    for end, k in zip(plan.ends, plan.scored):
        for j in range(L - k, L):  # window position j predicts stream[end - L + 1 + j] with j tokens before it
            t = int(end) - L + 1 + j
            assert t not in out, "a token scored twice"
            out[t] = j
    return out


@pytest.mark.parametrize("stride", [None, 3, 8])
def test_stream_protocols_score_one_fixed_token_set_at_every_length(stride):
    """Nonoverlapping and sliding score exactly the targets [S0, S0 + T) at every length, whatever
    the other lengths; sliding gives each at least L - S tokens of context."""
    cfg = eval_cfg(stride=stride)
    train_len, S0, T = 8, 16 * 8, 128
    for protocol in ("nonoverlapping", "sliding"):
        for L in (4, 8, 16, 24, 32, 128):
            plan = plan_windows(protocol, L, cfg, train_len, 10_000)
            targets = scored_targets(plan, L)
            assert sorted(targets) == list(range(S0, S0 + T)), (protocol, L)
            assert min(int(e) - L for e in plan.ends) >= 0  # every window lies inside the stream
            if protocol == "sliding":
                S = L // 2 if stride is None else min(stride, L)
                assert min(targets.values()) >= L - S == plan.min_context
    assert token_set("nonoverlapping", cfg, train_len, 10_000) == token_set("sliding", cfg, train_len, 10_000) == "val[128:256]"


def test_nonoverlapping_tiles_the_scored_range_with_consecutive_windows():
    plan = plan_windows("nonoverlapping", 8, eval_cfg(scored_tokens=64, first_scored=32), 8, 10_000)
    targets = scored_targets(plan, 8)
    assert sorted(targets) == list(range(32, 96)) and len(plan.ends) == 8
    assert sorted(set(targets.values())) == list(range(8)) and plan.min_context == 0


def test_the_validation_split_must_hold_the_history_and_the_scored_tokens():
    check_fits(16 * 8 + 128, eval_cfg(), 8)
    check_fits(16 * 8 + 8, eval_cfg(), 8)  # fewer scored tokens than asked: a warning, one window still fits
    assert token_set("sliding", eval_cfg(), 8, 16 * 8 + 8) == "val[128:136]"
    with pytest.raises(PosbenchError, match="too few to score a window of train_len=8 after eval.first_scored=128"):
        check_fits(16 * 8 + 7, eval_cfg(), 8)
    with pytest.raises(PosbenchError, match="longest evaluation window \\(256 tokens\\) is longer than the history"):
        check_fits(10_000, eval_cfg(multiples=[1, 32]), 8)
    check_fits(10_000, eval_cfg(multiples=[1, 32], first_scored=256), 8)


def test_fixed_target_scores_the_last_tokens_of_documents_at_every_length():
    rng = np.random.default_rng(0)
    docs = [rng.integers(1, 255, size=n, dtype=np.uint8) for n in rng.integers(5, 40, size=60)]
    val = np.concatenate([np.append(d, 0) for d in docs])  # 0 separates documents
    ends = document_targets(val, b"\0", 32, 4, 8)
    assert 0 < len(ends) <= 8 and ends.min() >= 32
    assert all(val[e + 1] == 0 and (val[e - 3 : e + 1] != 0).all() for e in ends)  # the document's own last bytes
    sets = [set(scored_targets(plan_windows("fixed_target", L, eval_cfg(), 8, len(val), ends), L)) for L in (8, 16, 32)]
    assert sets[0] == sets[1] == sets[2] == {int(e) - k for e in ends for k in range(4)}


def test_without_document_separators_fixed_targets_fall_back_to_evenly_spaced_points():
    val = np.arange(1, 2000) % 200 + 1  # no zero byte
    ends = document_targets(val.astype(np.uint8), b"\0", 64, 4, 10)
    assert len(ends) == 10 and ends.min() >= 64 and ends.max() < len(val) - 1


def test_scoring_matches_a_naive_forward_pass_per_window():
    from tqdm import tqdm

    from posbench.evaluate import score_windows
    from posbench.model import ModelConfig, build_model

    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=16, n_layers=1, n_heads=2, mlp_ratio=2), "alibi", {}, 8, 8).eval()
    stream = torch.randint(0, 256, (400,))
    plan = plan_windows("sliding", 16, eval_cfg(stride=5, scored_tokens=64, first_scored=32), 8, 400)
    with torch.no_grad():
        sums, counts = score_windows(model, stream, plan, 16, 48, torch.device("cpu"), tqdm(disable=True))
        naive, n = 0.0, 0
        for end, k in zip(plan.ends, plan.scored):
            x, y = stream[end - 16 : end], stream[end - 15 : end + 1]
            logp = torch.log_softmax(model(x[None], torch.arange(16))[0].double(), -1)
            naive -= logp[torch.arange(16 - k, 16), y[16 - k :]].sum().item()
            n += int(k)
    assert counts.sum() == n == 64
    assert sums.sum() / counts.sum() == pytest.approx(naive / n, rel=1e-5)
    assert counts[: 16 - 5].sum() == 0  # stride 5: only the last 5 positions of a window are scored


@pytest.mark.parametrize(
    "override, message",
    [
        ({"protocols": ["sliding", "striding"]}, "unknown eval protocol 'striding'; valid: nonoverlapping, sliding, fixed_target"),
        ({"protocols": []}, "eval.protocols is empty"),
        ({"stride": 0}, "eval.stride=0 must be between 1 and the shortest evaluation length 8"),
        ({"stride": 9}, "eval.stride=9 must be between 1"),
        ({"target_tokens": 9}, "eval.target_tokens=9 must be between 1"),
        ({"protocols": ["nonoverlapping"], "stride": 0, "target_tokens": 99}, None),
        ({"target_docs": 0}, "eval.target_docs must be a positive integer, got 0"),
    ],
)
def test_bad_evaluation_settings_get_one_line(override, message):
    if message is None:  # settings of a protocol that is not asked for are not checked
        check_eval(eval_cfg(**override), 8)
        return
    with pytest.raises(PosbenchError, match=message.replace("[", r"\[")):
        check_eval(eval_cfg(**override), 8)


def test_1x_perplexity_is_identical_whichever_multiples_were_requested():
    """The reproduction of the evaluation-integrity issue: 1x used to change with the longest
    multiple requested (20.14 with [1,2], 11.09 with [1,2,4,8,16] for one rope run)."""
    from posbench.evaluate import evaluate_model
    from posbench.model import ModelConfig, build_model

    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=16, n_layers=1, n_heads=2, mlp_ratio=2), "rope", {}, 8, 8).eval()
    val = np.random.default_rng(0).integers(0, 256, 4000).astype(np.uint8)
    cfg = dict(protocols=["nonoverlapping", "sliding", "fixed_target"], scored_tokens=256)
    short, _ = evaluate_model(model, val, 8, eval_cfg(multiples=[1, 2], **cfg), torch.device("cpu"), progress=False)
    long, _ = evaluate_model(model, val, 8, eval_cfg(multiples=[1, 2, 4, 8, 16], **cfg), torch.device("cpu"), progress=False)
    key = lambda r: (r["protocol"], r["length"])  # noqa: E731
    long_by_key = {key(r): r for r in long}
    assert len(short) == 6 and len(long) == 15
    for r in short:
        assert r["loss"] == long_by_key[key(r)]["loss"] and r["token_set"] == long_by_key[key(r)]["token_set"], key(r)
    by = {key(r): r for r in short}
    assert by["nonoverlapping", 8]["token_set"] == by["sliding", 8]["token_set"] != by["fixed_target", 8]["token_set"]
    assert by["nonoverlapping", 8]["tokens_scored"] == by["sliding", 16]["tokens_scored"] == 256
