"""The validation text that is scored: that it fits the settings (``check_corpus_fits``), and under a
subword tokenizer the same bytes as a byte run scores (segments chosen in bytes, then tokenized:
``scored_stream``; ``in_bytes``, posbench/evaluation/resolved.py, turns the byte-denominated settings
into tokens). ``with_scored_text`` gives a resolved evaluation (ResolvedEval) the text it scores."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import replace

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.data.corpus import DOC_SEPARATOR, Corpus
from posbench.data.tokens import encode, tokenizers_name
from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.protocols.base import StreamProtocol
from posbench.evaluation.resolved import ResolvedEval, in_bytes
from posbench.evaluation.windows import Segments, stream_segments

log = logging.getLogger("posbench")


_SCORED: dict[int, dict] = {}  # id(corpus) -> settings -> (tokens, segments): one tokenization per evaluation


def check_corpus_fits(corpus: Corpus, train_len: int, eval_cfg=None, separator: str = DOC_SEPARATOR) -> None:
    """The splits hold training windows, and (with ``eval_cfg``) every evaluation window asked for."""
    if len(corpus.train) < train_len + 2:
        raise PosbenchError(f"train_len={train_len} is longer than the training split allows ({len(corpus.train)} tokens)")
    if len(corpus.val) < train_len + 2:
        raise PosbenchError(f"train_len={train_len} is longer than the validation split allows ({len(corpus.val)} tokens)")
    if eval_cfg is not None and corpus.is_bytes:
        check_fits(ResolvedEval(eval_cfg, train_len, separator, text=corpus.val))
    elif eval_cfg is not None:  # the scored text is chosen in bytes, then tokenized: its own checks

        scored_stream(corpus, ResolvedEval(eval_cfg, train_len, separator))


def with_scored_text(ev: ResolvedEval, corpus: Corpus) -> ResolvedEval:
    """``ev`` with the validation text it scores (``scored_validation``): what scoring needs; and the
    training split, which a variant that fits something (+headscale) reads instead of the scored text."""
    text, segments = scored_validation(corpus, ev)
    return replace(ev, text=text, segments=segments, calibration=corpus.train)


def _char_start(text: np.ndarray, i: int) -> int:
    """``i``, or the start of the UTF-8 character it falls inside (continuation bytes are 10xxxxxx)."""
    while 0 < i < len(text) and (int(text[i]) & 0xC0) == 0x80:
        i -= 1
    return i


def scored_stream(corpus, ev: ResolvedEval) -> tuple[np.ndarray, Segments]:
    """(the validation tokens with a boundary at every scored segment's ends, the segments in token
    coordinates with their own token and byte counts) of a corpus under a subword tokenizer, for
    the evaluation ``ev`` (in_bytes applied here). Checked: segments exist, and the longest
    window has its history before the first one. Computed once per corpus and settings."""
    ev = ev.with_settings(in_bytes(ev.settings, ev.train_len, corpus.fingerprint))
    eval_cfg, separator = ev.settings, ev.separator
    if bad := [p for p in eval_cfg.protocols if not issubclass(PROTOCOLS.get(p), StreamProtocol)]:
        raise PosbenchError(f"eval.protocols: {bad[0]} {PROTOCOLS.get(bad[0]).bytes_only}; with "
                            f"data.tokenizer={tokenizers_name(corpus)} use nonoverlapping, sliding or press_sliding")
    S0, seg = ev.first_scored, ev.segment
    key = (S0, seg, eval_cfg.scored_tokens, separator)
    # by what the corpus is (its text and its tokenizer), never by the object's id, which a later corpus can reuse
    name = (corpus.fingerprint.get("hash"), json.dumps(corpus.fingerprint.get("tokenizer"), sort_keys=True, default=str))
    if key not in _SCORED.setdefault(name, {}):
        _SCORED[name][key] = _align(corpus, S0, seg, eval_cfg.scored_tokens, separator)
    tokens, segments = _SCORED[name][key]
    longest = max(ev.lengths)
    if len(segments.starts) and segments.starts[0] < longest:
        bpt = corpus.fingerprint["bytes_per_token"]
        raise PosbenchError(
            f"eval.first_scored={S0} bytes leave {int(segments.starts[0])} tokens before the first scored segment, fewer "
            f"than the longest evaluation window ({longest} tokens, ~{round(longest * bpt)} bytes at {bpt:.2f} bytes per "
            f"token); set eval.first_scored >= {math.ceil(longest * bpt * 1.25)} (it changes which bytes are scored)")
    return tokens, segments


def _align(corpus, S0: int, seg: int, budget, separator: str) -> tuple[np.ndarray, Segments]:
    text = np.asarray(corpus.val_text)
    found = stream_segments(text, separator.encode(), S0, seg, budget)
    if not len(found.starts):
        raise PosbenchError(
            f"no validation document holds a segment of eval.segment={seg} scored bytes after eval.first_scored={S0} "
            f"(the split has {len(text)} bytes); use a larger corpus, a smaller eval.segment or a smaller train_len")
    starts = [_char_start(text, int(s)) for s in found.starts]
    ends = [_char_start(text, int(s) + seg) for s in found.starts]
    cuts = [0, *sorted(set(starts) | set(ends)), len(text)]
    offsets, parts, n = {}, [], 0
    data = text.tobytes()
    for a, b in zip(cuts[:-1], cuts[1:]):
        offsets.setdefault(a, n)
        ids = encode(corpus.tokenizer, data[a:b], separator.encode())
        parts.append(ids)
        n += len(ids)
    offsets.setdefault(len(text), n)
    token_starts = np.asarray([offsets[s] for s in starts], dtype=np.int64)
    lengths = np.asarray([offsets[e] - offsets[s] for s, e in zip(starts, ends)], dtype=np.int64)
    byte_lengths = np.asarray([e - s for s, e in zip(starts, ends)], dtype=np.int64)
    segments = Segments(token_starts, int(lengths.max()), found.docs, found.n_docs, lengths=lengths,
                        byte_lengths=byte_lengths)
    return np.concatenate(parts), segments


def scored_validation(corpus, ev: ResolvedEval) -> tuple[np.ndarray, Segments | None]:
    """(the validation tokens to score, the scored segments): the corpus's own tokens and None for
    bytes (the protocols find the segments); for a subword tokenizer, the segments chosen in bytes
    and the tokens aligned to them (posbench/data/tokens.py)."""
    if corpus.is_bytes:
        return corpus.val, None

    return scored_stream(corpus, ev)


def check_fits(ev: ResolvedEval) -> None:
    """The validation text (``ev.text``) holds the history before the scored tokens and at least one segment."""
    eval_cfg, val, separator = ev.settings, ev.tokens(), ev.separator
    S0, seg, max_len = ev.first_scored, ev.segment, max(ev.lengths)
    streams = [p for p in eval_cfg.protocols if issubclass(PROTOCOLS.get(p), StreamProtocol)]
    # every key a longer window needs, in one refusal: one at a time, a user fixes one and meets the next
    short = []
    if max_len > S0 and any(PROTOCOLS.get(p).needs_history for p in eval_cfg.protocols):
        short.append(f"the history before the scored tokens (eval.first_scored={S0})")
    if streams and max_len > seg:
        short.append(f"a scored segment (eval.segment={seg}), which non-overlapping windows must tile")
    if short:
        keys = [k for k, have in (("first_scored", "first_scored=" in short[0]), ("segment", "eval.segment=" in short[-1]))
                if have]
        raise PosbenchError(
            f"the longest evaluation window ({max_len} tokens) is longer than " + " and ".join(short) + "; set "
            + " ".join(f"eval.{k}={max_len}" for k in keys) + " (or larger: it changes which tokens are scored, at "
            "every length, so every length is scored anew)")
    if not streams:
        return
    found = stream_segments(np.asarray(val), separator.encode(), S0, seg, eval_cfg.scored_tokens)
    if not len(found.starts):
        raise PosbenchError(
            f"no validation document holds a segment of eval.segment={seg} scored tokens after eval.first_scored={S0} "
            f"(the split has {len(val)} tokens); use a larger corpus, a smaller eval.segment or a smaller train_len")
    if eval_cfg.scored_tokens is not None and found.tokens < eval_cfg.scored_tokens - seg + 1:
        log.warning("the validation documents hold %d segments of %d tokens: %d scored tokens, not eval.scored_tokens=%d",
                    len(found.starts), seg, found.tokens, eval_cfg.scored_tokens)
