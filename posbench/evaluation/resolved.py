"""One evaluation, resolved: the ``eval`` settings (EvalConfig, posbench/evaluation/settings.py) made
concrete for one run on one corpus, once, and passed whole to every scoring function.

What it holds: the settings (a subword tokenizer's already in bytes: ``in_bytes``), the run's
train_len, document separator, task and extension tag (its rows' names), the forward's attention
options (the kernel), the corpus's hash (in every token set's name) and, once added
(posbench/evaluation/scored_text.py ``with_scored_text``), the validation tokens scored and a
subword tokenizer's scored segments. What follows from them is read here, never recomputed by a
caller: the lengths (multiples of train_len), the first scored token S0, the segment length,
fixed_target's m, each protocol's token set.

Before it, the evaluation functions took the pair (``eval_cfg``, ``train_len``) and the run's
other parts one by one (``evaluate_model`` 13 parameters, ``evaluate_into`` 11 and the untyped run
config); the protocol plug-ins (posbench/evaluation/protocols/base.py) keep their public
(``eval_cfg``, ``train_len``) interface, which this object feeds (``settings``, ``train_len``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from posbench.attention.options import AttentionOptions
from posbench.data.corpus import DOC_SEPARATOR
from posbench.evaluation.protocols import token_set
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.windows import (
    DEFAULT_CONTEXT_MULTIPLE,
    Segments,
    eval_lengths,
    first_scored,
    segment_length,
    target_tokens,
)
from posbench.tasks import LM, Task, build_task


@dataclass(frozen=True, eq=False)  # eq=False: it holds arrays, and two evaluations are the same object or not
class ResolvedEval:
    """An evaluation of one run on one corpus (see the module's docstring). ``text`` None: a plan
    only (which records the settings call for), nothing to score yet."""

    settings: EvalConfig  # a subword tokenizer's already in bytes (in_bytes)
    train_len: int
    separator: str = DOC_SEPARATOR  # data.doc_separator
    corpus_hash: str = ""  # the corpus fingerprint's hash: part of every token set's name
    tag: str = ""  # an extension run's (ExtendConfig.tag): its rows' names carry it
    options: AttentionOptions = AttentionOptions()  # the trained forward's (the kernel, Runtime.attention)
    task: Task = field(default_factory=lambda: build_task(LM))  # the run's task: language modelling, or a synthetic one
    text: np.ndarray | None = None  # the validation tokens scored (scored_text.with_scored_text)
    segments: Segments | None = None  # a subword tokenizer's scored segments, chosen in bytes; None: bytes
    val_tokens: int = 0  # the validation split's tokens, for a plan without ``text`` (the run's corpus stats)
    calibration: np.ndarray | None = None  # the training split: what a variant fits on (+headscale), never scored

    @property
    def lengths(self) -> list[int]:
        """The window lengths: the multiples of train_len, sorted, unique."""
        return eval_lengths(self.train_len, self.settings.multiples)

    @property
    def protocols(self) -> list[str]:
        return list(self.settings.protocols)

    @property
    def first_scored(self) -> int:
        """S0: no target before it (eval.first_scored, or 16 x train_len)."""
        return first_scored(self.settings, self.train_len)

    @property
    def segment(self) -> int:
        """Targets per scored segment (eval.segment, or 16 x train_len)."""
        return segment_length(self.settings, self.train_len)

    @property
    def target_tokens(self) -> int:
        """fixed_target's m (eval.target_tokens, or train_len / 2)."""
        return target_tokens(self.settings, self.train_len)

    @property
    def n_val(self) -> int:
        """Tokens of the validation text: the scored text's, or the split's for a plan."""
        return len(self.text) if self.text is not None else self.val_tokens

    @property
    def record_kind(self) -> str:
        """``perplexity`` (language modelling) or ``task`` (a synthetic task's accuracy)."""
        return self.task.record_kind

    def token_sets(self) -> dict[str, str]:
        """protocol -> the name of the tokens it scores at every length (protocols.token_set)."""
        return {p: token_set(p, self.settings, self.train_len, self.n_val, self.corpus_hash) for p in self.protocols}

    def tokens(self) -> np.ndarray:
        """The validation tokens to score; a plan without them cannot score (a caller's mistake)."""
        if self.text is None:
            raise ValueError("this evaluation has no scored text: add it with scored_text.with_scored_text(ev, corpus)")
        return self.text

    def with_settings(self, settings: EvalConfig) -> ResolvedEval:
        """The same run and text under other settings (the probes' fewer lengths and protocols)."""
        return replace(self, settings=settings)


def in_bytes(eval_cfg, train_len: int, fingerprint: dict | None):
    """The evaluation settings with the scored text's sizes explicit, in bytes, for a corpus under a
    subword tokenizer: a null ``eval.segment`` or ``eval.first_scored`` becomes 16 x train_len
    tokens' worth of bytes at the training split's bytes per token, rounded up (so that a segment
    holds a 16x window on average). Byte corpora: unchanged (their nulls mean 16 x train_len bytes,
    as always)."""
    bpt = (fingerprint or {}).get("bytes_per_token")
    if not (fingerprint or {}).get("tokenizer") or bpt is None:
        return eval_cfg
    default = DEFAULT_CONTEXT_MULTIPLE * train_len * math.ceil(bpt)
    return replace(eval_cfg, segment=eval_cfg.segment or default, first_scored=eval_cfg.first_scored or default)


def resolve_eval(eval_cfg: EvalConfig, train_len: int, fingerprint: dict | None = None, *, separator: str = DOC_SEPARATOR,
                 tag: str = "", kernel: str = "auto", task: Task | None = None) -> ResolvedEval:
    """The evaluation of a run (its ``eval`` settings, train_len, separator, extension tag, task) on
    a corpus of ``fingerprint`` (a Corpus's, or the corpus stats a run recorded: its hash, tokenizer,
    bytes per token, validation tokens), with the attention ``kernel``; without the scored text
    (scored_text.with_scored_text adds it)."""
    fp = fingerprint or {}
    return ResolvedEval(in_bytes(eval_cfg, train_len, fp), train_len, separator, fp.get("hash", ""), tag,
                        AttentionOptions(kernel=kernel), task or build_task(LM), val_tokens=fp.get("val_tokens", 0))
