"""Evaluation protocols: which tokens each scores, and that scoring matches a naive forward pass."""

import numpy as np
import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.data.load import load_corpus
from posbench.evaluation.protocols import PROTOCOLS, plan_windows, token_set
from posbench.evaluation.scored_text import check_fits
from posbench.evaluation.settings import EvalConfig, check_eval
from posbench.evaluation.windows import document_targets, documents, first_scored, segment_length, stream_segments
from posbench.evaluation.resolved import ResolvedEval
from tests.helpers import scored_targets, split_of_documents


def eval_cfg(**kw):
    base = dict(multiples=[1, 2, 4], protocols=["nonoverlapping", "sliding", "fixed_target"], scored_tokens=128,
                first_scored=None, stride=None, target_tokens=4, target_docs=8, batch_tokens=256, rope_scaling=[],
                rope_factor=None)
    return EvalConfig(**{**base, **kw})


def stream_plan(protocol, L, cfg, train_len, val):
    handler = PROTOCOLS.get(protocol)()
    return handler.plan(L, cfg, train_len, len(val), handler.prepare(val, cfg, train_len, "\0"))


@pytest.mark.parametrize("stride", [None, 3, 8])
def test_stream_protocols_score_one_fixed_token_set_at_every_length(stride):
    """Nonoverlapping, sliding and Press et al.'s sliding score exactly the same segments at every
    length, each segment inside one document; sliding gives each at least L - S tokens of context."""
    cfg = eval_cfg(stride=stride, scored_tokens=None, press_stride=2)
    train_len, seg = 8, 128
    val = split_of_documents([300, 90, 500, 200, 1000, 129, 50])
    starts, ends = documents(val, b"\0")
    expected = None
    for protocol in ("nonoverlapping", "sliding", "press_sliding"):
        for L in (4, 8, 16, 24, 32, 128):
            plan = stream_plan(protocol, L, cfg, train_len, val)
            targets = scored_targets(plan, L)
            expected = expected or sorted(targets)
            assert sorted(targets) == expected, (protocol, L)
            assert min(int(e) - L for e in plan.ends) >= 0  # every window lies inside the stream
            if protocol != "nonoverlapping":
                S = {"sliding": L // 2 if stride is None else min(stride, L), "press_sliding": 2}[protocol]
                assert min(targets.values()) >= L - S == plan.min_context
    # one segment in each document holding 128 targets after S0 = 128: documents 0 (300 bytes), 2, 3, 4, 5
    doc_of = np.searchsorted(ends, expected, side="right")
    assert sorted(set(doc_of)) == [0, 2, 3, 4, 5] and len(expected) == 5 * seg
    # the scored targets are the segments' own tokens, computed from the segments alone (not from a
    # plan): a plan whose windows all slid by one token would score the same set at every length
    segments = stream_segments(val, b"\0", first_scored(cfg, train_len), segment_length(cfg, train_len), None)
    assert expected == sorted(int(t) for s in segments.starts for t in range(s, s + seg))
    assert all(t >= 128 and starts[d] <= t < ends[d] for t, d in zip(expected, doc_of))
    names = {token_set(p, cfg, train_len, len(val)) for p in ("nonoverlapping", "sliding", "press_sliding")}
    assert names == {"segments[128, 1 per doc, from 128]"}


def test_a_budget_of_scored_tokens_gives_one_segment_per_document_first_then_by_room():
    val = split_of_documents([300, 90, 500, 200, 1000, 129, 50])
    few = stream_segments(val, b"\0", 128, 128, 2 * 128)  # fewer segments than documents: spread over them
    assert len(few.starts) == 2 and len(set(few.docs)) == 2
    many = stream_segments(val, b"\0", 128, 128, 9 * 128)
    counts = np.bincount(many.docs, minlength=7)
    assert counts.sum() == 9 and (counts[[0, 2, 3, 4, 5]] >= 1).all() and counts[4] == counts.max() >= 3
    starts, ends = documents(val, b"\0")
    for s, d in zip(many.starts, many.docs):  # inside its document, no two overlapping
        assert starts[d] <= s and s + 128 <= ends[d]
    assert len(set(range(0, 0)).union(*(set(range(s, s + 128)) for s in many.starts))) == 9 * 128


def test_the_default_scores_at_least_80_percent_of_the_default_corpus_documents_identically_at_every_length():
    """What the default scored text is for: on the embedded corpus (the stdlib), the default settings at
    train_len 64 score segments from at least 80% of the validation documents, the same tokens at 1x ... 16x."""
    from posbench.data.corpus import DataConfig

    val = np.asarray(load_corpus(DataConfig()).val)
    cfg, train_len = EvalConfig(), 64
    first = None
    for protocol in ("nonoverlapping", "sliding"):
        for L in (64, 128, 256, 512, 1024):
            plan = stream_plan(protocol, L, cfg, train_len, val)
            targets = sorted(scored_targets(plan, L))
            first = first or targets
            assert targets == first, (protocol, L)
    starts, ends = documents(val, b"\0")
    scored_docs = set(np.searchsorted(ends, first, side="right"))
    assert len(scored_docs) >= 0.8 * len(starts), f"{len(scored_docs)} of {len(starts)} documents"


def test_the_validation_split_must_hold_the_history_and_a_segment():
    cfg = eval_cfg(scored_tokens=None)
    check_fits(ResolvedEval(cfg, 8, text=split_of_documents([128 + 200])))
    with pytest.raises(PosbenchError, match="no validation document holds a segment of eval.segment=128 scored tokens "
                                            "after eval.first_scored=128"):
        check_fits(ResolvedEval(cfg, 8, text=split_of_documents([100, 150])))
    with pytest.raises(PosbenchError, match="longest evaluation window \\(256 tokens\\) is longer than the history"):
        check_fits(ResolvedEval(eval_cfg(multiples=[1, 32]), 8, text=split_of_documents([5000])))
    with pytest.raises(PosbenchError, match="longer than a scored segment \\(eval.segment=128\\)"):
        check_fits(ResolvedEval(eval_cfg(multiples=[1, 32], first_scored=256), 8, text=split_of_documents([5000])))
    check_fits(ResolvedEval(eval_cfg(multiples=[1, 32], first_scored=256, segment=256), 8,
                          text=split_of_documents([5000])))


def test_a_longer_multiple_is_refused_once_naming_every_key_it_needs():
    """The first refusal named eval.first_scored, the second eval.segment; one names both."""
    with pytest.raises(PosbenchError, match=r"longer than the history before the scored tokens \(eval.first_scored=128\) "
                                            r"and a scored segment \(eval.segment=128\).*; set eval.first_scored=256 "
                                            r"eval.segment=256 "):
        check_fits(ResolvedEval(eval_cfg(multiples=[1, 32]), 8, text=split_of_documents([5000])))


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


def test_scoring_matches_a_naive_forward_pass_per_window_and_per_document():
    """Each plan's loss is a naive forward pass per window, whether its windows run alone or with
    another plan's (shared windows run once); the documents' summed losses add up to it."""
    from tqdm import tqdm

    from posbench.evaluation.perplexity import score_plans
    from posbench.model.transformer import ModelConfig, build_model

    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=16, n_layers=1, n_heads=2, mlp_ratio=2), "alibi", {}, 8, 8).eval()
    val = split_of_documents([40, 100, 90, 120, 60])
    stream = torch.as_tensor(val.astype(np.int64))
    cfg = eval_cfg(stride=8, scored_tokens=None, segment=48, first_scored=32)
    plans = [stream_plan(p, 16, cfg, 8, val) for p in ("sliding", "nonoverlapping")]
    with torch.no_grad():
        together = score_plans(model, stream, plans, 16, 48, torch.device("cpu"), tqdm(disable=True))
        alone = [score_plans(model, stream, [p], 16, 48, torch.device("cpu"), tqdm(disable=True))[0] for p in plans]
        for plan, sc, sc_alone in zip(plans, together, alone):
            naive, n = 0.0, 0
            for end, k in zip(plan.ends, plan.scored):
                x, y = stream[end - 16 : end], stream[end - 15 : end + 1]
                logp = torch.log_softmax(model(x[None], torch.arange(16))[0].double(), -1)
                naive -= logp[torch.arange(16 - k, 16), y[16 - k :]].sum().item()
                n += int(k)
            assert sc.pos_count.sum() == n == sc.doc_tokens.sum() == 48 * len(sc.docs)
            assert sc.pos_sum.sum() / n == pytest.approx(naive / n, rel=1e-5)
            assert sc.doc_nats.sum() == pytest.approx(naive, rel=1e-5)
            assert np.allclose(sc.doc_nats, sc_alone.doc_nats) and np.allclose(sc.pos_sum, sc_alone.pos_sum)
    assert together[0].pos_count[: 16 - 8].sum() == 0  # stride 8: only the last 8 positions of a window are scored


@pytest.mark.parametrize(
    "override, message",
    [
        ({"protocols": ["sliding", "striding"]},
         "unknown eval protocol 'striding'; valid: {valid}"),  # the registry's names, in its order
        ({"protocols": ["press_sliding"], "press_stride": 0}, "eval.press_stride=0 must be between 1"),
        ({"segment": 0}, "eval.segment must be a positive integer, got 0 \\(or null for the default\\)"),
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
    message = message.replace("{valid}", ", ".join(PROTOCOLS.names()))
    with pytest.raises(PosbenchError, match=message.replace("[", r"\[")):
        check_eval(eval_cfg(**override), 8)


def test_1x_perplexity_is_identical_whichever_multiples_were_requested():
    """1x once changed with the longest multiple requested (20.14 with [1,2], 11.09 with [1,2,4,8,16]
    for one rope run): a length's number must not depend on which other lengths are scored."""
    from posbench.evaluation.perplexity import evaluate_model
    from posbench.model.transformer import ModelConfig, build_model

    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=16, n_layers=1, n_heads=2, mlp_ratio=2), "rope", {}, 8, 8).eval()
    val = np.random.default_rng(0).integers(0, 256, 4000).astype(np.uint8)
    cfg = dict(protocols=["nonoverlapping", "sliding", "fixed_target"], scored_tokens=None)
    short, _ = evaluate_model(model, ResolvedEval(eval_cfg(multiples=[1, 2], **cfg), 8, text=val), torch.device("cpu"),
                              progress=False)
    long, _ = evaluate_model(model, ResolvedEval(eval_cfg(multiples=[1, 2, 4, 8, 16], **cfg), 8, text=val),
                             torch.device("cpu"), progress=False)
    key = lambda r: (r["protocol"], r["length"])  # noqa: E731
    long_by_key = {key(r): r for r in long}
    assert len(short) == 6 and len(long) == 15
    for r in short:
        assert r["loss"] == long_by_key[key(r)]["loss"] and r["token_set"] == long_by_key[key(r)]["token_set"], key(r)
    by = {key(r): r for r in short}
    assert by["nonoverlapping", 8]["token_set"] == by["sliding", 8]["token_set"] != by["fixed_target", 8]["token_set"]
    assert by["nonoverlapping", 8]["tokens_scored"] == by["sliding", 16]["tokens_scored"] > 0


@pytest.mark.parametrize("name", PROTOCOLS.builtins())
def test_every_protocol_scores_the_same_targets_at_every_length(name):
    """Every built-in protocol (one file each in posbench/evaluation/protocols/, found by the registry, so a
    new one is tested here with no edit): its windows lie inside the stream, and the targets it scores
    are the same at every length, so its lengths differ only in the context they give. A published
    protocol whose targets change with L or repeat (``fixed_targets`` False) says so, and its token set
    is its own name (tests/evaluation/protocols/test_published.py checks its windows)."""
    cfg = eval_cfg(protocols=[name], stride=None, scored_tokens=None, press_stride=2, target_tokens=4, target_docs=4)
    train_len = 8
    val = split_of_documents([300, 90, 500, 200, 1000, 129, 50])
    check_eval(cfg, train_len)
    expected = None
    if not PROTOCOLS.get(name).fixed_targets:
        assert token_set(name, cfg, train_len, len(val)).startswith(name + "[")
        return
    for L in (8, 16, 32):
        plan = stream_plan(name, L, cfg, train_len, val)
        targets = sorted(scored_targets(plan, L))
        assert targets and min(int(e) - L for e in plan.ends) >= 0, (name, L)
        expected = expected or targets
        assert targets == expected, (name, L)
    assert token_set(name, cfg, train_len, len(val))
