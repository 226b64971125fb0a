"""The published protocols (posbench/evaluation/protocols/: lm_eval_rolling, yarn_truncated, hf_strided,
lceg_starts): which tokens each scores with which context, worked by hand on a few tokens and against
the references' loops restated on stream indices; the published text; scoring with unscored final
predictions against a naive forward pass of the reference's own (shorter) windows."""

import numpy as np
import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.evaluation.protocols import PROTOCOLS, token_set
from posbench.evaluation.settings import EvalConfig, check_eval
from posbench.evaluation.windows import PublishedText, documents, published_text
from tests.helpers import split_of_documents

PUBLISHED = ("lm_eval_rolling", "yarn_truncated", "hf_strided", "lceg_starts")


def pairs(plan, L):
    """Sorted (first input, target) of every scored prediction of a plan: a target's context is the
    stream from the first input up to the target."""
    out = []
    for end, k, first in zip(plan.ends.tolist(), plan.scored.tolist(), plan.scored_from(L).tolist()):
        out += [(end - L, end - L + 1 + j) for j in range(first, first + k)]
    return sorted(out)


def text(starts, ends):
    return PublishedText(np.asarray(starts), np.asarray(ends), np.arange(len(starts)), len(starts))


def plan_of(name, L, context, n_val=200, **cfg):
    return PROTOCOLS.get(name)().plan(L, EvalConfig(**cfg), 8, n_val, context)


# -- by hand: a document of 10 tokens at stream[11:21] (its separator at 10), L = 4 ----------------------


def test_lm_eval_rolling_by_hand():
    """lm-eval, max_length 4, context_len 1: [P d0 d1 d2] -> d0..d3; inputs d3..d6 -> d4..d7; then the last
    two targets d8 d9 read the 4 tokens before d9 (d5..d8)."""
    plan = plan_of("lm_eval_rolling", 4, text([11], [21]))
    assert pairs(plan, 4) == [(10, 11), (10, 12), (10, 13), (10, 14), (14, 15), (14, 16), (14, 17), (14, 18),
                              (16, 19), (16, 20)]
    # a document shorter than L: one window from its prefix, nothing past the document scored
    assert pairs(plan_of("lm_eval_rolling", 4, text([11], [13])), 4) == [(10, 11), (10, 12)]


def test_yarn_truncated_by_hand():
    """YaRN at max_length 4: [BOS d0 d1 d2] with labels = inputs scores d0 d1 d2 (L - 1), never d3..d9."""
    assert pairs(plan_of("yarn_truncated", 4, text([11], [21])), 4) == [(10, 11), (10, 12), (10, 13)]
    assert pairs(plan_of("yarn_truncated", 4, text([11, 22], [21, 24])), 4) == \
        [(10, 11), (10, 12), (10, 13), (21, 22), (21, 23)]


def test_hf_strided_by_hand():
    """transformers' loop, max_length 4, stride 2, on a text of 10 tokens t0..t9 at stream[11:21]:
    [t0..t3] scores t1 t2 t3 (the shift loses t0); [t2..t5] scores t4 t5; [t4..t7] t6 t7; [t6..t9] t8 t9."""
    plan = plan_of("hf_strided", 4, text([11], [21]), stride=2)
    assert pairs(plan, 4) == [(11, 12), (11, 13), (11, 14), (13, 15), (13, 16), (15, 17), (15, 18), (17, 19),
                              (17, 20)]
    # stride 3 on 9 tokens: [t0..t3] -> t1..t3; [t3..t6] -> t4..t6; [t6..t8] (shorter: 3 tokens) -> t7 t8
    assert pairs(plan_of("hf_strided", 4, text([11], [20]), stride=3), 4) == \
        [(11, 12), (11, 13), (11, 14), (14, 15), (14, 16), (14, 17), (17, 18), (17, 19)]


def test_lceg_starts_by_hand():
    """LCEG, seq_len 4, starts every 2 tokens of a text of 10 tokens: range(0, 10 - 4, 2) = 0 2 4, the last
    dropped: windows t0..t3 and t2..t5, each scoring its inputs' targets t1..t3 and t3..t5 (t3 twice)."""
    plan = plan_of("lceg_starts", 4, text([11], [21]), lceg_stride=2)
    assert pairs(plan, 4) == [(11, 12), (11, 13), (11, 14), (13, 14), (13, 15), (13, 16)]


# -- against each reference's loop, restated on stream indices, on documents of several sizes ----------


def reference_lm_eval(docs, L):
    out = []
    for s, t in docs:
        doc = list(range(s, t))
        window = [s - 1] + doc[: L - 1]  # the prefix token's place
        out += [(window[0], x) for x in doc[:L]]
        done = min(L, len(doc))
        while done < len(doc):
            last = min(done + L, len(doc))  # up to L more targets, read from the L tokens before the last
            out += [(doc[last - 1 - L], x) for x in doc[done:last]]
            done = last
    return sorted(out)


def reference_yarn(docs, L):
    return sorted((s - 1, x) for s, t in docs for x in range(s, min(t, s + L - 1)))


def reference_hf(a, b, L, S):
    out, prev = [], 0
    n = b - a
    for begin in range(0, n, S):
        end = min(begin + L, n)
        labels = range(max(begin + 1, prev), end)  # the last trg_len labels, the window's first never (the shift)
        out += [(a + begin, a + x) for x in labels]
        prev = end
        if end == n:
            break
    return sorted(out)


def reference_lceg(a, b, L, W):
    starts = list(range(0, b - a - L, W))[:-1]
    return sorted((a + i, a + x) for i in starts for x in range(i + 1, i + L))


@pytest.mark.parametrize("L", [3, 8, 16, 40])
def test_each_published_protocol_is_its_references_loop(L):
    val = split_of_documents([50, 7, 33, 1, 64, 12, 90, 30, 200])
    cfg = dict(multiples=[1, 2], first_scored=40, published_docs=6, segment=48)
    ctx = PROTOCOLS.get("lm_eval_rolling")().prepare(val, EvalConfig(**cfg), 8, "\0")
    docs = list(zip(ctx.starts.tolist(), ctx.ends.tolist()))
    assert docs[0][0] == 51 and len(docs) == 6  # from the first document starting at or after 40
    n = len(val)
    assert pairs(plan_of("lm_eval_rolling", L, ctx, n, **cfg), L) == reference_lm_eval(docs, L)
    assert pairs(plan_of("yarn_truncated", L, ctx, n, **cfg), L) == reference_yarn(docs, L)
    for S in (1, 2, L // 2 or 1, L):
        assert pairs(plan_of("hf_strided", L, ctx, n, stride=S, **cfg), L) == reference_hf(ctx.start, ctx.end, L, S)
    for W in (1, 3, 8):
        assert pairs(plan_of("lceg_starts", L, ctx, n, lceg_stride=W, **cfg), L) == reference_lceg(ctx.start, ctx.end, L, W)


@pytest.mark.parametrize("name", PUBLISHED)
def test_windows_read_inside_the_split_and_scored_predictions_never_see_past_the_text(name):
    val = split_of_documents([300, 90, 500, 200, 1000, 129, 50])
    cfg = EvalConfig(multiples=[1, 2, 4], first_scored=None, published_docs=2, lceg_stride=3)
    handler = PROTOCOLS.get(name)()
    ctx = handler.prepare(val, cfg, 8, "\0")
    for L in (8, 16, 32):
        plan = handler.plan(L, cfg, 8, len(val), ctx)
        assert plan.ends.min() - L >= 0 and plan.ends.max() <= len(val) - 1  # inputs and the target after them
        found = pairs(plan, L)
        assert all(ctx.start - 1 <= first and target < ctx.end for first, target in found)
        assert plan.min_context == min(t - f - 1 for f, t in found)  # the fewest tokens before a scored target
    assert token_set(name, cfg, 8, len(val), "abc") == f"abc:{name}[2 documents from 128]"


def test_the_published_text_is_whole_consecutive_documents_from_first_scored():
    val = split_of_documents([300, 90, 500, 200, 1000, 129, 50])
    starts, ends = documents(val, b"\0")
    t = published_text(val, b"\0", 128, 3, 128)
    assert t.starts.tolist() == starts[1:4].tolist() and t.ends.tolist() == ends[1:4].tolist()
    assert t.docs.tolist() == [1, 2, 3] and t.start == starts[1] and t.end == ends[3]
    # the last documents leave no room for a window past them: the text stops before
    assert published_text(val, b"\0", 128, 100, 128).docs.tolist() == [1, 2, 3, 4]
    with pytest.raises(PosbenchError, match="no validation document starts at or after eval.first_scored=5000"):
        published_text(val, b"\0", 5000, 3, 128)


def test_a_window_past_the_split_is_refused_in_one_line():
    with pytest.raises(PosbenchError, match="yarn_truncated: a window of 64 tokens would read past the validation split"):
        plan_of("yarn_truncated", 64, text([11], [21]), n_val=40)


@pytest.mark.parametrize("override, message", [
    ({"published_docs": 0}, "eval.published_docs must be a positive integer, got 0"),
    ({"lceg_stride": 0}, r"eval.lceg_stride must be a positive integer, got 0 \(or null for the default\)"),
])
def test_bad_published_settings_get_one_line(override, message):
    with pytest.raises(PosbenchError, match=message):
        check_eval(EvalConfig(**override), 8)


def test_scoring_with_unscored_final_predictions_is_the_references_shorter_windows():
    """score_plans on the published plans equals a naive forward pass of each reference window as the
    reference feeds it (shorter at a document's or the text's end), scoring its labels only."""
    from tqdm import tqdm

    from posbench.evaluation.perplexity import score_plans, token_layout
    from posbench.model.transformer import ModelConfig, build_model

    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=16, n_layers=1, n_heads=2, mlp_ratio=2), "rope", {}, 8, 8).eval()
    val = split_of_documents([50, 7, 33, 1, 64, 12, 90, 30, 200])
    stream = torch.as_tensor(val.astype(np.int64))
    cfg = dict(multiples=[1, 2], first_scored=40, published_docs=6, segment=48, stride=5, lceg_stride=3)
    ctx = PROTOCOLS.get("hf_strided")().prepare(val, EvalConfig(**cfg), 8, "\0")
    L = 16
    for name in PUBLISHED:
        plan = plan_of(name, L, ctx, len(val), **cfg)
        with torch.no_grad():
            sc = score_plans(model, stream, [plan], L, 64, torch.device("cpu"), tqdm(disable=True), per_token=True)[0]
            naive = []
            for first, target in pairs(plan, L):  # the reference's window: inputs first .. target - 1
                x = stream[first:target]
                logp = torch.log_softmax(model(x[None], torch.arange(len(x)))[0, -1].double(), -1)
                naive.append(-logp[stream[target]].item())
        assert sc.pos_count.sum() == len(naive) == plan.tokens_scored
        assert sc.pos_sum.sum() == pytest.approx(sum(naive), rel=1e-5), name
        _, positions = token_layout(plan, L)
        assert np.array_equal(np.bincount(positions, minlength=L), sc.pos_count.astype(int)), name


def test_without_separators_the_published_text_is_one_stretch_of_the_split():
    val = np.random.default_rng(0).integers(1, 256, 5000).astype(np.uint8)
    t = published_text(val, b"\0", 100, 10, 64)
    assert t.starts.tolist() == [100] and t.ends.tolist() == [5000 - 1 - 64] and t.docs.tolist() == [0]
    plan = plan_of("lm_eval_rolling", 32, t, n_val=len(val))
    assert pairs(plan, 32)[0] == (99, 100) and plan.tokens_scored == t.end - t.start


@pytest.mark.parametrize("name", PUBLISHED)
def test_a_subword_tokenizers_scored_text_refuses_them_in_one_line(name):
    """posbench-eval-hf's path (scored_text.scored_stream: the text chosen in bytes, then tokenized) has no
    documents in tokens to plan them on: refused before anything is tokenized, naming the protocol."""
    from types import SimpleNamespace

    from posbench.evaluation.resolved import ResolvedEval
    from posbench.evaluation.scored_text import scored_stream

    corpus = SimpleNamespace(fingerprint={"tokenizer": {"kind": "file"}})
    ev = ResolvedEval(EvalConfig(protocols=["nonoverlapping", name]), 64)
    with pytest.raises(PosbenchError, match=f"^eval.protocols: {name} scores whole documents chosen in tokens, .* "
                                            "with data.tokenizer=file use nonoverlapping, sliding or press_sliding$"):
        scored_stream(corpus, ev)
