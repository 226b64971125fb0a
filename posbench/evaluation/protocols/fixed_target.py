"""``fixed_target``: the last ``eval.target_tokens`` tokens of ``eval.target_docs`` long documents are
scored at every length, with L tokens of context before them (the "same targets, more context" curve)."""

from __future__ import annotations

import numpy as np

from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.protocols.base import Protocol
from posbench.evaluation.windows import (
    WindowPlan,
    check_within_shortest,
    document_targets,
    first_scored,
    target_tokens,
)


@PROTOCOLS.register("fixed_target")
class FixedTarget(Protocol):
    order = 40
    words = "fixed final targets under growing context"
    note = ("the same final tokens of each validation document, scored with the L - m tokens before them as context "
            "(the targets never change, only context and position do)")
    needs_history = True
    bytes_only = "scores the last tokens of documents, other text under another tokenizer"

    def check(self, eval_cfg, train_len):
        check_within_shortest("target_tokens", eval_cfg.target_tokens, eval_cfg, train_len,
                              " (or null for half of train_len)")

    def prepare(self, val_tokens, eval_cfg, train_len, doc_separator):
        return document_targets(val_tokens, doc_separator.encode(), first_scored(eval_cfg, train_len),
                                target_tokens(eval_cfg, train_len), eval_cfg.target_docs)

    def token_set(self, eval_cfg, train_len, n_val, corpus_hash=""):
        prefix = f"{corpus_hash}:" if corpus_hash else ""
        return (f"{prefix}doc-ends[from {first_scored(eval_cfg, train_len)}: last {target_tokens(eval_cfg, train_len)} "
                f"of {eval_cfg.target_docs} docs]")

    def plan(self, length, eval_cfg, train_len, n_val, context):
        if context is None:
            raise ValueError("the fixed_target protocol needs the document ends (its prepare)")
        m, ends = target_tokens(eval_cfg, train_len), np.asarray(context)
        # each target is the end of its own document: one unit per document
        return WindowPlan(ends, np.full(len(ends), m), length - m, units=np.arange(len(ends)),
                          unit_docs=np.arange(len(ends)))
