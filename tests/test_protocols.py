"""Evaluation protocols: which tokens each scores, and that scoring matches a naive forward pass."""

import math

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from posbench.errors import PosbenchError
from posbench.protocols import check_eval, document_targets, plan_windows, scored_total


def eval_cfg(**kw):
    base = dict(multiples=[1, 2, 4], protocols=["nonoverlapping", "sliding", "fixed_target"], windows_at_max=4,
                stride=None, target_tokens=4, target_docs=8, batch_tokens=256, rope_scaling=[], rope_factor=None)
    return OmegaConf.create({**base, **kw})


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
def test_sliding_scores_the_same_tokens_at_every_length_with_enough_context(stride):
    cfg = eval_cfg(stride=stride)
    max_len, lengths = 32, [8, 16, 32]
    total = scored_total(10_000, max_len, 4, cfg.protocols)
    sets = []
    for L in lengths:
        plan = plan_windows("sliding", L, total, max_len, cfg, None)
        targets = scored_targets(plan, L)
        S = L // 2 if stride is None else stride
        assert min(targets.values()) >= L - S == plan.min_context  # every scored token sees >= L - S context
        assert min(targets) - min(targets.values()) >= 0 and max(plan.ends) < 10_000
        sets.append(set(targets))
    assert sets[0] == sets[1] == sets[2] and len(sets[0]) == total


def test_nonoverlapping_scores_every_token_of_consecutive_windows():
    plan = plan_windows("nonoverlapping", 8, 64, 32, eval_cfg(), None)
    targets = scored_targets(plan, 8)
    assert sorted(targets) == list(range(1, 65))
    assert sorted(set(targets.values())) == list(range(8)) and plan.min_context == 0


def test_fixed_target_scores_the_last_tokens_of_documents_at_every_length():
    rng = np.random.default_rng(0)
    docs = [rng.integers(1, 255, size=n, dtype=np.uint8) for n in rng.integers(5, 40, size=60)]
    val = np.concatenate([np.append(d, 0) for d in docs])  # 0 separates documents
    ends = document_targets(val, b"\0", 32, 4, 8)
    assert 0 < len(ends) <= 8
    assert all(val[e + 1] == 0 and (val[e - 3 : e + 1] != 0).all() for e in ends)  # the document's own last bytes
    sets = [set(scored_targets(plan_windows("fixed_target", L, 0, 32, eval_cfg(), ends), L)) for L in (8, 16, 32)]
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
    plan = plan_windows("sliding", 16, 64, 32, eval_cfg(stride=5), None)
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
