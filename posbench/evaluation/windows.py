"""Window arithmetic of the evaluation: the lengths (multiples of train_len), where scored text may
start (``first_scored``), the scored segments in the validation documents (``stream_segments``,
``document_targets``) and a protocol's plan of windows (``WindowPlan``). No model, no registry:
numbers and token positions only."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.data.corpus import documents  # the validation split's documents: one definition, the data layer's


@dataclass
class WindowPlan:
    ends: np.ndarray  # [n] exclusive end of each window's inputs (= index of its last target)
    scored: np.ndarray  # [n] how many final positions of each window are scored
    min_context: int  # fewest tokens of context any scored token sees
    units: np.ndarray | None = None  # [n] the unit (segment, or fixed-target window) each window scores into
    unit_docs: np.ndarray | None = None  # [units] the validation document of each unit
    # [n] predictions at the window's very end that are not scored (None: none), before the ``scored`` ones:
    # window position p is scored when L - unscored_last - scored <= p < L - unscored_last. A reference that
    # labels its inputs (transformers' labels=input_ids) predicts L - 1 targets from L inputs; a window shorter
    # than L in the reference is a window of L here whose predictions past its text are not scored (causal:
    # the scored ones never see them)
    unscored_last: np.ndarray | None = None

    def scored_from(self, L: int) -> np.ndarray:
        """[n] each window's first scored position at length L (that prediction saw that many earlier tokens)."""
        return L - self.tail() - np.asarray(self.scored, dtype=np.int64)

    def tail(self) -> np.ndarray:
        """[n] ``unscored_last``, zeros where None."""
        return np.zeros(len(self.ends), dtype=np.int64) if self.unscored_last is None else \
            np.asarray(self.unscored_last, dtype=np.int64)

    @property
    def tokens_scored(self) -> int:
        return int(self.scored.sum())


@dataclass(frozen=True)
class Segments:
    """The scored targets of the stream protocols: segments [start, start + length) of the
    validation stream, each inside one document."""

    starts: np.ndarray  # first target of each segment, in stream order
    length: int
    docs: np.ndarray  # the validation document (index in the split) of each segment
    n_docs: int  # documents in the validation split
    # a subword tokenizer's segments (posbench/data/tokens.py): chosen in bytes, so each holds its own
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


@dataclass(frozen=True)
class PublishedText:
    """The text the published protocols score (lm_eval_rolling, hf_strided, lceg_starts, yarn_truncated):
    whole validation documents, consecutive in the split, as a reference reads a test set of documents
    or its concatenation. ``stream[start - 1]`` is the separator before the first document: where a
    reference puts its BOS/EOT prefix."""

    starts: np.ndarray  # each document's first token
    ends: np.ndarray  # each document's end (exclusive: its separator)
    docs: np.ndarray  # each document's index in the split
    n_docs: int  # documents in the split

    @property
    def start(self) -> int:
        return int(self.starts[0])

    @property
    def end(self) -> int:
        return int(self.ends[-1])


def published_text(val: np.ndarray, separator: bytes, first: int, n_docs: int, room: int) -> PublishedText:
    """``n_docs`` consecutive whole documents from the first that starts at or after ``first`` (and after
    the split's first token, so that a prefix token precedes it), as LCEG reads the first ten documents
    of its test set: fewer where the split ends first, for the text ends ``room`` tokens (the longest
    default window) before the split's end, so that a window starting in the text may read past it,
    never past the split. Without separators the one document is UNSEPARATED_TOKENS of the split from
    ``first`` (as the stream protocols score that many there). Fixed by the settings and the split alone."""
    starts, ends = documents(np.asarray(val), separator)
    lo = max(first, 1)
    if len(starts) == 1 and starts[0] < lo:  # no separators: the split is one document, read from ``first``
        starts, ends = np.array([lo]), np.array([min(len(val) - 1 - room, lo + UNSEPARATED_TOKENS)])
    pick = np.flatnonzero((starts >= lo) & (ends + room <= len(val) - 1))[:n_docs]
    if len(pick) == 0 or ends[pick[0]] <= starts[pick[0]]:
        raise PosbenchError(f"no validation document starts at or after eval.first_scored={first} and ends {room} tokens "
                            f"before the split's end (it has {len(val)} tokens); use a smaller eval.first_scored or a "
                            "larger corpus")
    return PublishedText(starts[pick], ends[pick], pick if len(starts) > 1 else np.array([0]), len(starts))


def check_inside(plan: WindowPlan, L: int, n_val: int, protocol: str) -> WindowPlan:
    """Every window of ``plan`` reads inside the split: its L inputs and the target after its last one."""
    if len(plan.ends) == 0:
        raise PosbenchError(f"{protocol}: the published text holds no window of {L} tokens; raise eval.published_docs")
    if plan.ends.min() - L < 0 or plan.ends.max() > n_val - 1:
        raise PosbenchError(f"{protocol}: a window of {L} tokens would read past the validation split ({n_val} tokens) "
                            "after the published text; lower eval.published_docs or eval.first_scored")
    return plan


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


def check_within_shortest(key: str, value, eval_cfg, train_len: int, hint: str) -> None:
    """``eval.<key>`` (a count of tokens per window: a stride, fixed_target's m) lies in 1 .. the
    shortest evaluation length; None (the key's default) passes."""
    shortest = min(eval_lengths(train_len, eval_cfg.multiples))
    if value is not None and not 1 <= value <= shortest:
        raise PosbenchError(f"eval.{key}={value} must be between 1 and the shortest evaluation length {shortest}{hint}")


def eval_lengths(train_len: int, multiples) -> list[int]:
    """Window lengths for the evaluation multiples (whole tokens: ``check_multiples``), sorted, unique."""
    return sorted({max(1, round(train_len * m)) for m in multiples})
