"""posbench/evaluation/resolved.py: one evaluation resolved once (settings in bytes for a subword
tokenizer, the lengths, S0, the segment, the token sets, the run's tag, task and kernel), and what
each scoring function reads from it."""

import numpy as np
import pytest

from posbench.evaluation.protocols import token_set
from posbench.evaluation.resolved import ResolvedEval, in_bytes, resolve_eval
from posbench.evaluation.settings import EvalConfig
from posbench.tasks import LM, build_task

CFG = EvalConfig(multiples=[1, 2, 4], protocols=["nonoverlapping", "fixed_target"], target_tokens=None)


def test_the_derived_numbers_are_the_settings_at_the_run_s_length():
    ev = ResolvedEval(CFG, 16)
    assert ev.lengths == [16, 32, 64] and ev.protocols == ["nonoverlapping", "fixed_target"]
    assert ev.first_scored == ev.segment == 16 * 16 and ev.target_tokens == 8  # the 16x defaults; m = train_len / 2
    assert ev.record_kind == "perplexity" and ev.task.name == LM  # language modelling unless a task is given
    assert ev.n_val == 0 and ResolvedEval(CFG, 16, text=np.zeros(700, dtype=np.uint8)).n_val == 700


def test_token_sets_are_the_protocols_names_on_the_run_s_corpus():
    ev = ResolvedEval(CFG, 16, corpus_hash="h", val_tokens=5000)
    assert ev.token_sets() == {p: token_set(p, CFG, 16, 5000, "h") for p in CFG.protocols}
    assert ev.token_sets()["nonoverlapping"].startswith("h:segments[256,")


def test_a_subword_tokenizer_s_evaluation_is_resolved_in_bytes_once():
    """resolve_eval applies in_bytes: a null segment and first_scored become 16 x train_len tokens' worth
    of bytes (bytes per token rounded up); a byte corpus keeps its settings; the hash, tag, separator,
    kernel and task are the run's."""
    subword = {"tokenizer": {"kind": "bpe"}, "bytes_per_token": 3.2, "hash": "abc", "val_tokens": 900}
    ev = resolve_eval(CFG, 16, subword, separator="\n", tag="+yarn@4x+ft5", kernel="chunked",
                      task=build_task("passkey"))
    assert ev.settings.segment == ev.settings.first_scored == 16 * 16 * 4 == ev.segment
    assert ev.settings == in_bytes(CFG, 16, subword)
    assert (ev.corpus_hash, ev.tag, ev.separator, ev.options.kernel, ev.val_tokens) == ("abc", "+yarn@4x+ft5", "\n",
                                                                                        "chunked", 900)
    assert ev.record_kind == "task"
    assert resolve_eval(CFG, 16, {"hash": "abc"}).settings is CFG  # bytes: unchanged
    assert resolve_eval(CFG, 16).corpus_hash == ""


def test_other_settings_keep_the_run_and_its_text():
    text = np.arange(100, dtype=np.uint8)
    ev = ResolvedEval(CFG, 16, corpus_hash="h", tag="@2x+ft0", text=text)
    fewer = ev.with_settings(EvalConfig(multiples=[1, 4], protocols=["nonoverlapping"]))
    assert fewer.lengths == [16, 64] and fewer.text is text and (fewer.corpus_hash, fewer.tag) == ("h", "@2x+ft0")
    assert ev.lengths == [16, 32, 64]  # frozen: the original is unchanged


def test_a_plan_without_text_cannot_score():
    with pytest.raises(ValueError, match="no scored text: add it with scored_text.with_scored_text"):
        ResolvedEval(CFG, 16).tokens()
