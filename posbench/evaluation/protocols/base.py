"""The interface of an evaluation protocol (``Protocol``) and the stream protocols' common part
(``StreamProtocol``: the same scored segments at every length, read with different strides)."""

from __future__ import annotations

import numpy as np

from posbench.evaluation.windows import (
    PublishedText,
    Segments,
    WindowPlan,
    check_inside,
    first_scored,
    published_text,
    segment_length,
    stream_segments,
)

# -- the protocols ------------------------------------------------------------------------------


class Protocol:
    """An evaluation protocol: which windows a model reads at length L and which of their tokens
    count. ``words`` and ``note`` are how the report names and explains it; ``needs_history``:
    its windows reach back before their targets, so the history before S0 must hold the longest."""

    name = "protocol"
    words = ""
    note = ""
    shows_stride = False  # the report adds "(stride ...)" to ``words``, read from the records (sliding windows)
    needs_history = False
    order = 100  # where the report lists it among the protocols (built-ins: 10 to 80, in the order they were added)
    # why it cannot score a subword tokenizer's text (chosen in bytes, then tokenized: posbench/evaluation/scored_text.py);
    # "" for the stream protocols, which can
    bytes_only = ""
    # it scores the same targets, each once, at every length (what makes its lengths comparable); False: a published
    # protocol whose targets change with L (YaRN's truncation) or repeat (LCEG's overlapping windows)
    fixed_targets = True

    def check(self, eval_cfg, train_len: int) -> None:
        """One-line errors for settings of this protocol."""

    def prepare(self, val_tokens: np.ndarray, eval_cfg, train_len: int, doc_separator: str):
        """What the plans need from the validation split (once per evaluation); None: nothing."""
        return None

    def token_set(self, eval_cfg, train_len: int, n_val: int, corpus_hash: str = "") -> str:
        raise NotImplementedError

    def plan(self, length: int, eval_cfg, train_len: int, n_val: int, context) -> WindowPlan:
        raise NotImplementedError


class StreamProtocol(Protocol):
    """The stream protocols score the same segments (``stream_segments``) at every length; they
    differ in their stride, the tokens between consecutive windows (``stride_of``)."""

    stride_of = staticmethod(lambda length, eval_cfg: length)

    def prepare(self, val_tokens, eval_cfg, train_len, doc_separator):
        return stream_segments(np.asarray(val_tokens), doc_separator.encode(), first_scored(eval_cfg, train_len),
                               segment_length(eval_cfg, train_len), eval_cfg.scored_tokens)

    def token_set(self, eval_cfg, train_len, n_val=0, corpus_hash=""):
        prefix = f"{corpus_hash}:" if corpus_hash else ""
        T = "1 per doc" if eval_cfg.scored_tokens is None else f"T={eval_cfg.scored_tokens}"
        return f"{prefix}segments[{segment_length(eval_cfg, train_len)}, {T}, from {first_scored(eval_cfg, train_len)}]"

    def plan(self, length, eval_cfg, train_len, n_val, context):
        if not isinstance(context, Segments):
            raise ValueError("the stream protocols need the scored segments (their prepare)")
        # a window ending at e reads stream[e - L : e] and predicts targets stream[e - L + 1 : e + 1]
        if context.lengths is not None:
            return self._plan_each(length, eval_cfg, context)
        L, seg, n = length, context.length, len(context.starts)
        S = min(self.stride_of(L, eval_cfg), seg)
        last = np.minimum(np.arange(1, -(-seg // S) + 1) * S, seg) - 1  # each window's last target, from the segment's start
        scored_one = np.diff(np.concatenate([[-1], last]))
        ends = (context.starts[:, None] + last[None, :]).ravel()
        # a final partial window reads the L tokens before its end, like a sliding window
        return WindowPlan(ends, np.tile(scored_one, n), L - S, units=np.repeat(np.arange(n), len(last)),
                          unit_docs=context.docs)

    def _plan_each(self, L: int, eval_cfg, context: Segments) -> WindowPlan:
        """The plan over segments of differing lengths (a subword tokenizer's): the same windows,
        segment by segment; a segment shorter than L is one window reading the L tokens before its end."""
        ends, scored, units, strides = [], [], [], []
        for u, (start, seg) in enumerate(zip(context.starts, context.lengths)):
            S = min(self.stride_of(L, eval_cfg), int(seg))
            last = np.minimum(np.arange(1, -(-int(seg) // S) + 1) * S, seg) - 1
            ends.append(start + last)
            scored.append(np.diff(np.concatenate([[-1], last])))
            units.append(np.full(len(last), u))
            strides.append(S)
        return WindowPlan(np.concatenate(ends), np.concatenate(scored), L - max(strides), units=np.concatenate(units),
                          unit_docs=context.docs)


class PublishedProtocol(Protocol):
    """A protocol as a paper's or a library's code computes perplexity, on the published text
    (windows.published_text: ``eval.published_docs`` whole consecutive validation documents from S0 on). Each scores its own tokens (some the same token in several windows, some a different set at
    each length), so each token set is named after its protocol alone: the report never compares
    one with another protocol's numbers. ``windows`` gives a plan's (ends, scored, unscored_last,
    document of each window) at length L; the plan is checked to read inside the split."""

    words_short = ""  # the one-line definition (the protocols table of scripts/published_protocols.py)
    bytes_only = "scores whole documents chosen in tokens, which a text chosen in bytes and then tokenized does not give"

    def prepare(self, val_tokens, eval_cfg, train_len, doc_separator):
        return published_text(np.asarray(val_tokens), doc_separator.encode(), first_scored(eval_cfg, train_len),
                              eval_cfg.published_docs, segment_length(eval_cfg, train_len))

    def token_set(self, eval_cfg, train_len, n_val=0, corpus_hash=""):
        prefix = f"{corpus_hash}:" if corpus_hash else ""
        return f"{prefix}{self.name}[{eval_cfg.published_docs} documents from {first_scored(eval_cfg, train_len)}]"

    def plan(self, length, eval_cfg, train_len, n_val, context):
        if not isinstance(context, PublishedText):
            raise ValueError(f"the {self.name} protocol needs the published text (its prepare)")
        ends, scored, tail, docs = (np.asarray(x, dtype=np.int64) for x in self.windows(length, eval_cfg, train_len, context))
        # each window is one unit, in the document of its last scored target (a strided window may straddle a separator)
        plan = WindowPlan(ends, scored, int((length - tail - scored).min()) if len(ends) else 0,
                          units=np.arange(len(ends)), unit_docs=context.docs[docs], unscored_last=tail)
        return check_inside(plan, length, n_val, self.name)

    def windows(self, length: int, eval_cfg, train_len: int, text: PublishedText):
        raise NotImplementedError
