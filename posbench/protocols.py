"""Evaluation protocols: which windows of the validation stream a model reads at length L, and
which of their tokens are scored.

A window is given by its end e: the model reads tokens ``stream[e - L : e]`` and predicts
``stream[e - L + 1 : e + 1]``; only the last ``scored`` predictions of the window count.

``nonoverlapping`` (Press et al. 2022, section 4)
    Consecutive windows, every token scored. The first T tokens are scored at every length
    (T = longest length x ``eval.windows_at_max``), so lengths differ only in how much context and
    which positions the model gets. A token near a window's start has almost no context: this
    protocol mixes "uses longer context" with "suffers less from the early-token curse".
``sliding`` (Press et al. 2022, section 4.1; stride S)
    Windows advance by S tokens and score only their last S tokens, so every scored token sees at
    least L - S tokens of context. The same T tokens are scored at every length, taken after the
    first ``max_len`` tokens so that the longest window has a full history. Costs L / S times the
    non-overlapping protocol.
``fixed_target`` (the control of Kazemnejad et al. 2023)
    The last ``eval.target_tokens`` tokens of each of ``eval.target_docs`` validation documents
    are scored at every length, with the L - m tokens before them as context (which may reach into
    the previous document). The targets never change, so a change with L is the effect of more
    context and of the far positions the targets now sit at, without the early-token curse.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from posbench.errors import PosbenchError

log = logging.getLogger("posbench")


@dataclass(frozen=True)
class ProtocolInfo:
    """How the report names and explains a protocol (the one description of each, used everywhere)."""

    words: str  # a few words, for headings and summaries
    note: str  # one sentence for the report's introduction


PROTOCOLS = {
    "nonoverlapping": ProtocolInfo(
        "non-overlapping windows",
        "consecutive windows, every token scored (tokens early in a window have little context)"),
    "sliding": ProtocolInfo(
        "sliding windows",
        "windows advance by a stride and score only their last tokens, so every scored token sees at least "
        "L - stride tokens of context"),
    "fixed_target": ProtocolInfo(
        "fixed final targets under growing context",
        "the same final tokens of each validation document, scored with the L - m tokens before them as context "
        "(the targets never change, only context and position do)"),
}


@dataclass
class WindowPlan:
    ends: np.ndarray  # [n] exclusive end of each window's inputs (= index of its last target)
    scored: np.ndarray  # [n] how many final positions of each window are scored
    min_context: int  # fewest tokens of context any scored token sees

    @property
    def tokens_scored(self) -> int:
        return int(self.scored.sum())


def stride_for(length: int, stride: int | None) -> int:
    """The sliding stride at window length L: ``eval.stride`` tokens, or L / 2 when null."""
    return max(1, length // 2) if stride is None else min(stride, length)


def target_tokens(eval_cfg, shortest: int) -> int:
    """m, the scored final tokens per document: ``eval.target_tokens``, or half the shortest length."""
    return max(1, shortest // 2) if eval_cfg.target_tokens is None else min(eval_cfg.target_tokens, shortest)


def reserved_tokens(protocols, max_len: int) -> int:
    """Tokens the plans need before the scored range (sliding keeps a full history for max_len)."""
    return max_len if "sliding" in protocols else 0


def scored_total(n_val: int, max_len: int, windows_at_max: int, protocols) -> int:
    """T, the number of tokens scored at every length by the stream-based protocols."""
    fit = (n_val - 1 - reserved_tokens(protocols, max_len)) // max_len
    if 1 <= fit < windows_at_max:
        log.warning(
            "validation split fits only %d windows of %d tokens (eval.windows_at_max=%d)", fit, max_len, windows_at_max)
    if fit < 1:
        raise PosbenchError(
            f"validation split has {n_val} tokens, too few for the longest evaluation window ({max_len} tokens"
            f"{', twice for the sliding protocol' if 'sliding' in protocols else ''}); use a larger corpus, "
            "a smaller train_len or smaller eval.multiples"
        )
    return max_len * min(fit, windows_at_max)


def document_targets(val: np.ndarray, separator: bytes, max_len: int, target_tokens: int, n_docs: int) -> np.ndarray:
    """Index of the last byte of up to n_docs documents (evenly spread over the validation split)
    that are at least target_tokens long and have max_len tokens of stream before their targets.
    Without document separators, evenly spaced points of the stream stand in for document ends."""
    lo, hi = max_len + target_tokens - 1, len(val) - 1  # room for the longest context and one target after
    ends = np.empty(0, dtype=np.int64)
    if separator:
        seps = np.flatnonzero(np.asarray(val) == separator[0])
        starts = np.concatenate([[-1], seps[:-1]]) + 1
        long_enough = (seps - starts) >= target_tokens
        ends = (seps - 1)[long_enough]
        ends = ends[(ends >= lo) & (ends < hi)]
    if len(ends) == 0:
        if hi <= lo:
            raise PosbenchError(f"validation split has {len(val)} tokens, too few for a fixed-target window of {max_len}")
        ends = np.linspace(lo, hi - 1, num=n_docs).round().astype(np.int64)
    if len(ends) > n_docs:
        ends = ends[np.linspace(0, len(ends) - 1, num=n_docs).round().astype(np.int64)]
    return np.unique(ends)


def plan_windows(protocol: str, length: int, total: int, max_len: int, eval_cfg, doc_ends: np.ndarray | None,
                 shortest: int | None = None) -> WindowPlan:
    """The windows of one protocol at length L (``shortest``: the shortest evaluated length, which
    sets the fixed-target count m so that it is the same at every length)."""
    L = length
    if protocol == "nonoverlapping":
        n = total // L
        return WindowPlan(np.arange(1, n + 1) * L, np.full(n, L), 0)
    if protocol == "sliding":
        S = stride_for(L, eval_cfg.stride)
        start = reserved_tokens(["sliding"], max_len)
        ends = start + np.minimum(np.arange(1, -(-total // S) + 1) * S, total)
        scored = np.diff(np.concatenate([[start], ends]))
        return WindowPlan(ends, scored, L - S)
    if protocol == "fixed_target":
        if doc_ends is None:
            raise ValueError("the fixed_target protocol needs the document ends (document_targets)")
        m = target_tokens(eval_cfg, shortest or L)
        return WindowPlan(np.asarray(doc_ends), np.full(len(doc_ends), m), L - m)
    raise PosbenchError(f"unknown eval protocol {protocol!r}; valid: {', '.join(PROTOCOLS)}")


def eval_lengths(train_len: int, multiples) -> list[int]:
    """Window lengths for the evaluation multiples (whole tokens: ``check_multiples``), sorted, unique."""
    return sorted({max(1, round(train_len * m)) for m in multiples})


def check_multiples(multiples, train_len: int) -> None:
    """Positive multiples that include 1 (the baseline of every ratio) and give whole lengths."""
    if not multiples:
        raise PosbenchError("eval.multiples is empty; give positive multiples of train_len, e.g. [1,2,4,8,16]")
    if bad := [x for x in multiples if x <= 0]:
        raise PosbenchError(f"eval.multiples must be positive, got {bad[0]:g}; e.g. [1,2,4,8,16]")
    if 1 not in multiples:
        raise PosbenchError(f"eval.multiples={list(multiples)} must include 1 (the training length, the baseline of every ratio); "
                            "e.g. [1,2,4,8,16]")
    if bad := [x for x in multiples if abs(train_len * x - round(train_len * x)) > 1e-9]:
        raise PosbenchError(f"eval.multiples: {bad[0]:g} x train_len={train_len} is {train_len * bad[0]:g} tokens, "
                            "not a whole length; use multiples that give whole lengths, e.g. [1,2,4,8,16]")


def check_eval(eval_cfg, train_len: int) -> None:
    """One-line errors for evaluation settings that types cannot express."""
    check_multiples(eval_cfg.multiples, train_len)
    protocols = list(eval_cfg.protocols)
    if not protocols:
        raise PosbenchError(f"eval.protocols is empty; give any of {', '.join(PROTOCOLS)}")
    if bad := [p for p in protocols if p not in PROTOCOLS]:
        raise PosbenchError(f"unknown eval protocol {bad[0]!r}; valid: {', '.join(PROTOCOLS)}")
    shortest = min(eval_lengths(train_len, eval_cfg.multiples))
    if "sliding" in protocols and eval_cfg.stride is not None and not 1 <= eval_cfg.stride <= shortest:
        raise PosbenchError(f"eval.stride={eval_cfg.stride} must be between 1 and the shortest evaluation length {shortest} (or null for L/2)")
    m = eval_cfg.target_tokens
    if "fixed_target" in protocols and m is not None and not 1 <= m <= shortest:
        raise PosbenchError(f"eval.target_tokens={m} must be between 1 and the shortest evaluation length {shortest} (or null for half of it)")
    for key in ("windows_at_max", "target_docs", "batch_tokens"):
        if eval_cfg[key] < 1:
            raise PosbenchError(f"eval.{key} must be a positive integer, got {eval_cfg[key]}")
