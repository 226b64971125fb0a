"""Evaluation protocols: which windows of the validation stream a model reads at length L, and
which of their tokens are scored.

A window is given by its end e: the model reads tokens ``stream[e - L : e]`` and predicts
``stream[e - L + 1 : e + 1]``; only the last ``scored`` predictions of the window count.

Which tokens are scored is fixed by the settings and the corpus alone, never by the lengths asked
for or by when they were asked for (``token_set`` names it; every record carries that name). The
stream protocols score *segments* spread over the whole validation split: one segment of
``eval.segment`` targets (default 16 x train_len, the longest default window, so that the
non-overlapping protocol tiles it at every length) inside every validation document long enough to
hold one (at most 128 documents, evenly chosen), placed in the middle of the document; with
``eval.scored_tokens`` = T, T / segment segments instead (one per document first, the rest by
document length). No scored target lies before ``eval.first_scored`` (default 16 x train_len), so
every window up to 16x has its full history. So a 1x number is the same whichever other multiples
were requested, nonoverlapping and sliding numbers score the same tokens and can be compared with
each other, and the text scored represents the split rather than one stretch of it: a verdict read
from three files can be an artefact of those files (issue 23 measured the same checkpoint's 16x/1x
at 1.80 and 2.15 on two stretches). Every record keeps its summed loss per document, so the report
can bootstrap over documents.

``nonoverlapping`` (Press et al. 2022, section 4)
    Consecutive windows tile the scored range, every token of a window scored (a final partial
    window reads the L tokens before its end and scores only the rest). Lengths differ only in how
    much context and which positions the model gets. A token near a window's start has almost no
    context: this protocol mixes "uses longer context" with "suffers less from the early-token curse".
``sliding`` (posbench's own; stride S, default L / 2)
    Windows advance by S tokens and score only their last S tokens, so every scored token sees at
    least L - S tokens of context. Costs L / S times the non-overlapping protocol; with the default
    stride every other window is a non-overlapping window, and the evaluator runs a window once for
    both protocols. Press et al.'s sliding evaluation is stride 1: that is ``press_sliding``.
``press_sliding`` (Press et al. 2022; their fairseq evaluation's ``--context-window L-1``)
    Stride ``eval.press_stride`` (default 1): every scored token sees at least L - stride tokens of
    context (L - 1 at stride 1, as in the paper). Costs L / stride times the non-overlapping protocol:
    meant for a GPU, or for short lengths on CPU.
``fixed_target`` (the control of Kazemnejad et al. 2023)
    The last m = ``eval.target_tokens`` tokens (default train_len / 2) of ``eval.target_docs``
    validation documents that end after S0 are scored at every length, with the L - m tokens before
    them as context (which may reach into the previous document). The targets never change, so a
    change with L is the effect of more context and of the far positions the targets now sit at,
    without the early-token curse. Its targets are not those of the stream protocols.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, List, Optional

import numpy as np

from posbench.errors import PosbenchError
from posbench.registry import Registry, plugin_code, subclass_check

log = logging.getLogger("posbench")


@dataclass(frozen=True)
class EvalConfig:
    """What a trained model is scored on (``eval=`` in conf/eval/). The scored tokens are fixed by
    these settings, never by the multiples: a 1x number does not change when other lengths are
    asked for, and nonoverlapping and sliding score the same tokens."""

    multiples: List[float] = field(default_factory=lambda: [1, 2, 4, 8, 16])  # must include 1
    protocols: List[str] = field(default_factory=lambda: ["nonoverlapping", "sliding"])  # and/or press_sliding, fixed_target
    stride: Optional[int] = None  # sliding: tokens between windows (context >= L - stride); None: L / 2
    press_stride: int = 1  # press_sliding: Press et al.'s stride 1 (context >= L - 1); a few tokens to make it cheaper
    # the stream protocols' scored text: segments of `segment` targets spread over the validation documents
    scored_tokens: Optional[int] = None  # T; None: one segment in every document long enough (at most 128)
    segment: Optional[int] = None  # targets per segment; None: 16 x train_len (non-overlapping windows tile it up to 16x)
    first_scored: Optional[int] = None  # S0, no target before it; None: 16 x train_len (history for every window up to 16x)
    target_tokens: Optional[int] = None  # fixed_target: final tokens of each document; None: train_len / 2
    target_docs: int = 64  # fixed_target: documents scored
    batch_tokens: int = 16384  # tokens per forward pass
    # evaluation-time variants: extra rows from the same weights (posbench/variants)
    rope_scaling: List[str] = field(default_factory=list)  # rope: any of the RoPE scalings (linear, ntk, dynamic_ntk, yarn)
    rope_factor: Optional[float] = None  # static scalings' s; None: the longest multiple (>= 1 when set)
    bca: List[str] = field(default_factory=lambda: ["xpos"])  # encodings also evaluated with blockwise causal attention
    # attention temperature c: rows <encoding>+temp<c> with every logit x (1 + c ln(L / train_len))
    temperature: List[float] = field(default_factory=list)
    # any other variant by name (a plug-in's entry point or module:attr), or {name: ..., <its settings>}
    variants: List[Any] = field(default_factory=list)
    # fractions of train.steps at which training stops briefly to score 1x and the longest multiple
    # (nonoverlapping, the same tokens as the final evaluation) into metrics["during_training"]
    during_training: List[float] = field(default_factory=list)
    # per layer and head: mean attention distance and entropy at every length (posbench/diagnostics.py),
    # over attention_examples windows of the validation text (a task run: examples of its task)
    attention_stats: bool = False
    attention_examples: int = 4

    def check(self, train_len: int) -> None:
        """Every check of the evaluation settings, for posbench-train and posbench-eval alike."""
        check_eval(self, train_len)
        if bad := [f for f in self.during_training if not 0 < f <= 1]:
            raise PosbenchError(f"eval.during_training holds fractions of train.steps in (0, 1], got {bad[0]:g}")
        if self.during_training and "nonoverlapping" not in self.protocols:
            raise PosbenchError("eval.during_training scores the nonoverlapping protocol: add it to eval.protocols "
                                f"(got {list(self.protocols)}) or set eval.during_training=[]")
        if self.attention_examples < 1:
            raise PosbenchError(f"eval.attention_examples must be a positive integer, got {self.attention_examples}")
        from posbench.variants import check_variant_settings  # the variants check their own settings

        check_variant_settings(self)


@dataclass
class WindowPlan:
    ends: np.ndarray  # [n] exclusive end of each window's inputs (= index of its last target)
    scored: np.ndarray  # [n] how many final positions of each window are scored
    min_context: int  # fewest tokens of context any scored token sees
    units: np.ndarray | None = None  # [n] the unit (segment, or fixed-target window) each window scores into
    unit_docs: np.ndarray | None = None  # [units] the validation document of each unit

    @property
    def tokens_scored(self) -> int:
        return int(self.scored.sum())


def stride_for(length: int, stride: int | None) -> int:
    """The sliding stride at window length L: ``eval.stride`` tokens, or L / 2 when null."""
    return max(1, length // 2) if stride is None else min(stride, length)


# The longest multiple the default first_scored and segment leave room for: windows up to 16 x train_len.
DEFAULT_CONTEXT_MULTIPLE = 16
MAX_DEFAULT_SEGMENTS = 128  # eval.scored_tokens=null: one segment per document, in at most this many documents
UNSEPARATED_TOKENS = 32768  # eval.scored_tokens=null on a split without document separators


def first_scored(eval_cfg, train_len: int) -> int:
    """S0, no scored target before it: ``eval.first_scored``, or 16 x train_len, so that every
    window up to 16x has its full history. It never depends on which lengths are asked for."""
    return eval_cfg.first_scored if eval_cfg.first_scored is not None else DEFAULT_CONTEXT_MULTIPLE * train_len


def segment_length(eval_cfg, train_len: int) -> int:
    """Targets per scored segment: ``eval.segment``, or 16 x train_len (the longest default window,
    so that non-overlapping windows tile a segment at every default length)."""
    return eval_cfg.segment if eval_cfg.segment is not None else DEFAULT_CONTEXT_MULTIPLE * train_len


def target_tokens(eval_cfg, train_len: int) -> int:
    """m, the scored final tokens of each document (fixed_target): ``eval.target_tokens``, or half
    the training length."""
    return eval_cfg.target_tokens if eval_cfg.target_tokens is not None else max(1, train_len // 2)


def token_set(protocol: str, eval_cfg, train_len: int, n_val: int = 0, corpus_hash: str = "") -> str:
    """The name of the tokens a protocol scores at every length. Two records are comparable (same
    targets) exactly when their token sets are equal; nonoverlapping, sliding and press_sliding
    share theirs. The name follows from the settings and the corpus (its hash) alone."""
    return PROTOCOLS.get(protocol)().token_set(eval_cfg, train_len, n_val, corpus_hash)


def documents(val: np.ndarray, separator: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of every validation document: the bytes between separators (the whole split
    is one document without separators)."""
    n = len(val)
    if not separator:
        return np.array([0]), np.array([n])
    seps = np.flatnonzero(np.asarray(val) == separator[0])
    starts, ends = np.concatenate([[0], seps + 1]), np.concatenate([seps, [n]])
    keep = ends > starts  # no empty document (after a final separator)
    return starts[keep], ends[keep]


@dataclass(frozen=True)
class Segments:
    """The scored targets of the stream protocols: segments [start, start + length) of the
    validation stream, each inside one document."""

    starts: np.ndarray  # first target of each segment, in stream order
    length: int
    docs: np.ndarray  # the validation document (index in the split) of each segment
    n_docs: int  # documents in the validation split
    # a subword tokenizer's segments (posbench/tokens.py): chosen in bytes, so each holds its own
    # number of tokens (and of bytes, where a boundary moved to a character's start); None: bytes
    lengths: np.ndarray | None = None
    byte_lengths: np.ndarray | None = None

    @property
    def tokens(self) -> int:
        return len(self.starts) * self.length if self.lengths is None else int(self.lengths.sum())

    @property
    def bytes(self) -> int:
        """The bytes of text scored (tokens are bytes unless a tokenizer said otherwise)."""
        return self.tokens if self.byte_lengths is None else int(self.byte_lengths.sum())


def stream_segments(val: np.ndarray, separator: bytes, first: int, length: int, budget: int | None) -> Segments:
    """Where the stream protocols score: ``budget`` // ``length`` segments (None: one in every
    document that holds one after ``first``, at most MAX_DEFAULT_SEGMENTS of them), one per
    document first (evenly chosen documents when there are fewer segments than documents), the rest
    given to the documents with the most room left (largest remainder of a share proportional to
    their room). A document's k segments sit in the middles of its k equal parts: its text on both
    sides, and no segment at a document's start, where the context is another file."""
    starts, ends = documents(val, separator)
    lo = np.maximum(starts, first)  # no target before S0
    room = np.maximum(ends - lo, 0)
    capacity = room // length
    eligible = np.flatnonzero(capacity >= 1)
    if len(eligible) == 0:
        return Segments(np.empty(0, dtype=np.int64), length, np.empty(0, dtype=np.int64), len(starts))
    if budget is None:
        wanted = min(len(eligible), MAX_DEFAULT_SEGMENTS) if len(starts) > 1 else max(1, UNSEPARATED_TOKENS // length)
    else:
        wanted = max(1, budget // length)
    count = np.zeros(len(starts), dtype=np.int64)
    if wanted <= len(eligible):
        count[eligible[np.unique(np.linspace(0, len(eligible) - 1, num=wanted).round().astype(np.int64))]] = 1
    else:
        count[eligible] = 1
        extra = min(wanted - len(eligible), int((capacity[eligible] - 1).sum()))
        spare = (capacity - count).clip(min=0).astype(float)
        share = extra * spare / spare.sum() if spare.sum() else spare
        add = np.minimum(np.floor(share).astype(np.int64), spare.astype(np.int64))
        left = extra - int(add.sum())
        order = np.argsort(-(share - add), kind="stable")  # largest remainders first
        for d in order:
            if left <= 0:
                break
            if add[d] < spare[d]:
                add[d] += 1
                left -= 1
        count += add
    seg_starts, seg_docs = [], []
    for d in np.flatnonzero(count):
        part = room[d] / count[d]
        for j in range(count[d]):
            seg_starts.append(int(lo[d] + j * part + (part - length) // 2))
            seg_docs.append(int(d))
    return Segments(np.asarray(seg_starts, dtype=np.int64), length, np.asarray(seg_docs, dtype=np.int64), len(starts))


def check_fits(val: np.ndarray, eval_cfg, train_len: int, separator: str = "\0") -> None:
    """The validation split holds the history before the scored tokens and at least one segment."""
    S0, seg = first_scored(eval_cfg, train_len), segment_length(eval_cfg, train_len)
    max_len = max(eval_lengths(train_len, eval_cfg.multiples))
    if max_len > S0 and any(PROTOCOLS.get(p).needs_history for p in eval_cfg.protocols):
        raise PosbenchError(
            f"the longest evaluation window ({max_len} tokens) is longer than the history before the scored tokens "
            f"(eval.first_scored={S0}); set eval.first_scored >= {max_len} (it changes which tokens are scored, at every length)")
    streams = [p for p in eval_cfg.protocols if issubclass(PROTOCOLS.get(p), _Stream)]
    if not streams:
        return
    if max_len > seg:
        raise PosbenchError(
            f"the longest evaluation window ({max_len} tokens) is longer than a scored segment (eval.segment={seg}): "
            f"non-overlapping windows could not tile it; set eval.segment >= {max_len} (it changes which tokens are scored)")
    found = stream_segments(np.asarray(val), separator.encode(), S0, seg, eval_cfg.scored_tokens)
    if not len(found.starts):
        raise PosbenchError(
            f"no validation document holds a segment of eval.segment={seg} scored tokens after eval.first_scored={S0} "
            f"(the split has {len(val)} tokens); use a larger corpus, a smaller eval.segment or a smaller train_len")
    if eval_cfg.scored_tokens is not None and found.tokens < eval_cfg.scored_tokens - seg + 1:
        log.warning("the validation documents hold %d segments of %d tokens: %d scored tokens, not eval.scored_tokens=%d",
                    len(found.starts), seg, found.tokens, eval_cfg.scored_tokens)


def document_targets(val: np.ndarray, separator: bytes, first: int, target_tokens: int, n_docs: int) -> np.ndarray:
    """Index of the last byte of up to n_docs documents, evenly spread over the validation split
    from index ``first`` on, that are at least target_tokens long. Without document separators,
    evenly spaced points of the stream stand in for document ends."""
    lo, hi = first + target_tokens - 1, len(val) - 1  # history before the targets, and one target after
    ends = np.empty(0, dtype=np.int64)
    if separator:
        seps = np.flatnonzero(np.asarray(val) == separator[0])
        starts = np.concatenate([[-1], seps[:-1]]) + 1
        long_enough = (seps - starts) >= target_tokens
        ends = (seps - 1)[long_enough]
        ends = ends[(ends >= lo) & (ends < hi)]
    if len(ends) == 0:
        if hi <= lo:
            raise PosbenchError(f"validation split has {len(val)} tokens, too few for fixed targets after eval.first_scored={first}")
        ends = np.linspace(lo, hi - 1, num=n_docs).round().astype(np.int64)
    if len(ends) > n_docs:
        ends = ends[np.linspace(0, len(ends) - 1, num=n_docs).round().astype(np.int64)]
    return np.unique(ends)


def plan_windows(protocol: str, length: int, eval_cfg, train_len: int, n_val: int, context=None) -> WindowPlan:
    """The windows of one protocol at length L (``context``: what the protocol's ``prepare`` found
    in the validation split: the stream protocols' segments, fixed_target's document ends). The
    scored targets depend only on the settings and the split (``token_set``), never on L."""
    return PROTOCOLS.get(protocol)().plan(length, eval_cfg, train_len, n_val, context)


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

    def check(self, eval_cfg, train_len: int) -> None:
        """One-line errors for settings of this protocol."""

    def prepare(self, val_tokens: np.ndarray, eval_cfg, train_len: int, doc_separator: str):
        """What the plans need from the validation split (once per evaluation); None: nothing."""
        return None

    def token_set(self, eval_cfg, train_len: int, n_val: int, corpus_hash: str = "") -> str:
        raise NotImplementedError

    def plan(self, length: int, eval_cfg, train_len: int, n_val: int, context) -> WindowPlan:
        raise NotImplementedError


PROTOCOLS: Registry[type[Protocol]] = Registry("eval protocol", "posbench.protocols", check=subclass_check(Protocol),
                                               sort=False)


class _Stream(Protocol):
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


@PROTOCOLS.register("nonoverlapping")
class NonOverlapping(_Stream):
    words = "non-overlapping windows"
    note = "consecutive windows, every token scored (tokens early in a window have little context)"


@PROTOCOLS.register("sliding")
class Sliding(_Stream):
    words = "sliding windows"
    shows_stride = True
    note = ("posbench's sliding windows: they advance by a stride (default L/2) and score only their last tokens, so every "
            "scored token sees at least L - stride tokens of context")
    needs_history = True
    stride_of = staticmethod(lambda length, eval_cfg: stride_for(length, eval_cfg.stride))

    def check(self, eval_cfg, train_len):
        check_within_shortest("stride", eval_cfg.stride, eval_cfg, train_len, " (or null for L/2)")


@PROTOCOLS.register("press_sliding")
class PressSliding(_Stream):
    words = "Press et al.'s sliding windows"
    shows_stride = True
    note = ("Press et al. (2022)'s sliding evaluation: windows advance by eval.press_stride tokens (1 in the paper) and "
            "score only their last ones, so every scored token sees at least L - stride tokens (L - 1 at stride 1)")
    needs_history = True
    stride_of = staticmethod(lambda length, eval_cfg: min(eval_cfg.press_stride, length))

    def check(self, eval_cfg, train_len):
        check_within_shortest("press_stride", eval_cfg.press_stride, eval_cfg, train_len, " (1 is Press et al.'s)")


@PROTOCOLS.register("fixed_target")
class FixedTarget(Protocol):
    words = "fixed final targets under growing context"
    note = ("the same final tokens of each validation document, scored with the L - m tokens before them as context "
            "(the targets never change, only context and position do)")
    needs_history = True

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


def check_within_shortest(key: str, value, eval_cfg, train_len: int, hint: str) -> None:
    """``eval.<key>`` (a count of tokens per window: a stride, fixed_target's m) lies in 1 .. the
    shortest evaluation length; None (the key's default) passes."""
    shortest = min(eval_lengths(train_len, eval_cfg.multiples))
    if value is not None and not 1 <= value <= shortest:
        raise PosbenchError(f"eval.{key}={value} must be between 1 and the shortest evaluation length {shortest}{hint}")


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


NULLABLE = ("scored_tokens", "segment")


def check_eval(eval_cfg, train_len: int) -> None:
    """One-line errors for evaluation settings that types cannot express (each protocol checks its own)."""
    check_multiples(eval_cfg.multiples, train_len)
    protocols = list(eval_cfg.protocols)
    if not protocols:
        raise PosbenchError(f"eval.protocols is empty; give any of {', '.join(PROTOCOLS.names())}")
    if bad := [p for p in protocols if p not in PROTOCOLS.names() and ":" not in p]:
        raise PosbenchError(f"unknown eval protocol {bad[0]!r}; valid: {', '.join(PROTOCOLS.names())}")
    for p in protocols:
        cls = PROTOCOLS.get(p)
        with plugin_code("eval protocol", p, cls.__module__, "checking the settings"):
            cls().check(eval_cfg, train_len)
    if eval_cfg.first_scored is not None and eval_cfg.first_scored < 1:
        raise PosbenchError(f"eval.first_scored must be positive (or null for 16 x train_len), got {eval_cfg.first_scored}")
    for key in ("scored_tokens", "segment", "target_docs", "batch_tokens"):
        if getattr(eval_cfg, key) is not None and getattr(eval_cfg, key) < 1:
            raise PosbenchError(f"eval.{key} must be a positive integer, got {getattr(eval_cfg, key)}"
                                + (" (or null for the default)" if key in NULLABLE else ""))
