"""posbench/evaluation/plan.py: the records a run's settings call for (rows x lengths x protocols on
each protocol's token set), what a run still misses, and one merge in which a new record replaces
an old one of the same key."""

from posbench.encodings import ModelShape, build_encoding
from posbench.evaluation.plan import (
    attention_plan,
    evaluation_plan,
    merge,
    missing,
    record_key,
    why_new,
)
from posbench.evaluation.protocols import token_set
from posbench.evaluation.settings import EvalConfig
from posbench.tasks import LM, build_task
from posbench.evaluation.resolved import ResolvedEval

CFG = EvalConfig(multiples=[1, 2], protocols=["nonoverlapping", "sliding"], rope_scaling=["yarn"], bca=[])


def planned(settings: EvalConfig) -> ResolvedEval:
    """A language-modelling evaluation at train_len 16 on a corpus of hash "h" with 5000 validation tokens."""
    return ResolvedEval(settings, 16, corpus_hash="h", task=build_task(LM), val_tokens=5000)


def test_the_plan_is_every_row_at_every_length_and_protocol_on_its_token_set():
    plan = evaluation_plan(build_encoding("rope", ModelShape(32, 4, 2, 16)), planned(CFG))
    assert [p.key for p in plan if p.key[:2] == ("rope", "sliding")] == [
        ("rope", "sliding", 16, token_set("sliding", CFG, 16, 5000, "h")),
        ("rope", "sliding", 32, token_set("sliding", CFG, 16, 5000, "h"))]
    assert len(plan) == 2 * 2 * 2 and {p.key[0] for p in plan} == {"rope", "rope+yarn@2x"}
    assert {p.kind for p in plan} == {"perplexity"}  # no attention diagnostics unless asked


def test_what_a_run_misses_is_what_its_metrics_lack():
    plan = evaluation_plan(build_encoding("rope", ModelShape(32, 4, 2, 16)), planned(CFG))
    done = [{"variant": k[0], "protocol": k[1], "length": k[2], "token_set": k[3]} for k in (p.key for p in plan[:3])]
    assert missing(plan, {"evaluations": done}) == plan[3:]
    assert missing(plan, {}) == plan


def test_a_rescoring_says_why_each_record_is_new():
    """Each missing record under its first cause: a protocol the run never scored, another token set for a
    protocol it did (every length of it anew), a new row, a new multiple; counted, in one line."""
    shape = ModelShape(32, 4, 2, 16)
    had = EvalConfig(multiples=[1, 2], protocols=["nonoverlapping"], bca=[])
    done = {"evaluations": [{"variant": k[0], "protocol": k[1], "length": k[2], "token_set": k[3]} for k in
                            (p.key for p in evaluation_plan(build_encoding("rope", shape), planned(had)))]}
    now = EvalConfig(multiples=[1, 2, 4], protocols=["nonoverlapping", "sliding"], rope_scaling=["yarn"], bca=[])
    todo = missing(evaluation_plan(build_encoding("rope", shape), planned(now)), done)
    assert why_new(todo, done, 16) == "new protocol sliding: 6; new multiple 4x: 1; new variant rope+yarn@4x: 3"
    other_set = EvalConfig(multiples=[1, 2], protocols=["nonoverlapping"], bca=[], scored_tokens=256)
    todo = missing(evaluation_plan(build_encoding("rope", shape), planned(other_set)), done)
    old, new = token_set("nonoverlapping", had, 16, 5000), token_set("nonoverlapping", other_set, 16, 5000)
    assert why_new(todo, done, 16) == f"new token set for nonoverlapping ({new}; the run's: {old}): 2"


def test_a_new_record_replaces_the_old_one_of_the_same_key_and_others_stay():
    old = [{"variant": "rope", "protocol": "sliding", "length": 16, "token_set": "a", "ppl": 5.0},
           {"variant": "rope", "protocol": "sliding", "length": 16, "token_set": "b", "ppl": 6.0}]
    new = [{"variant": "rope", "protocol": "sliding", "length": 16, "token_set": "a", "ppl": 4.0}]
    merged = merge("perplexity", old, new)
    assert sorted((r["token_set"], r["ppl"]) for r in merged) == [("a", 4.0), ("b", 6.0)]
    assert record_key("attention", {"length": 32, "layer": 0}) == (32,)


def test_attention_diagnostics_are_planned_where_asked_and_the_recorder_sees_the_scores():
    asked = EvalConfig(multiples=[1, 2], attention_stats=True, bca=[])
    assert [p.key for p in attention_plan(build_encoding("alibi", ModelShape(32, 4, 2, 16)), planned(asked))] == [(16,), (32,)]
    assert attention_plan(build_encoding("alibi", ModelShape(32, 4, 2, 16)), planned(CFG)) == []
    assert attention_plan(build_encoding("shaw", ModelShape(32, 4, 2, 16)), planned(asked)) == []  # its own attention
