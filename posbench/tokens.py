"""A corpus under a subword tokenizer: its token caches, and the scored text chosen in bytes.

The byte cache of posbench/data.py is tokenized into a cache of its own, keyed on the text's hash
and the tokenizer's (the sha256 of its tokenizer.json), as uint16 or uint32 ids. Each document is
encoded alone and the separator's own tokens are put between documents, so no token spans two
documents, as no byte does.

The scored text is the same bytes whatever the tokenizer: the segments of the stream protocols
are chosen in the validation split's *bytes* by the very rule byte runs use
(protocols.stream_segments; ``eval.segment``, ``eval.first_scored`` and ``eval.scored_tokens``
count bytes), and the split is then tokenized with a token boundary forced at every segment's
start and end, so that a segment's tokens spell exactly its bytes. That changes the tokenization
at two points per segment (of a thousand tokens or more), which is the price of scoring identical
text; a boundary that falls inside a multi-byte UTF-8 character moves to the character's start.
Segments then differ in their number of tokens; the windows tile each one in tokens
(protocols._Stream.plan). Lengths (train_len and its multiples) stay in tokens.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np

from posbench.errors import PosbenchError
from posbench.protocols import (DEFAULT_CONTEXT_MULTIPLE, PROTOCOLS, Segments, _Stream, eval_lengths, first_scored,
                                segment_length, stream_segments)
from posbench.results import make_dirs, private_tempdir, publish_dir
from posbench import tokenizer as tokenizers

log = logging.getLogger("posbench")

BATCH_DOCUMENTS = 512  # documents per encode_batch call (the library spreads a batch over the cores)


def pieces(data: bytes, separator: bytes) -> list[bytes]:
    """The documents of a byte stream: split at the separator (an empty last piece after a final
    one); without a separator, lines, so that one huge stream is encoded in parts."""
    return data.split(separator) if separator else data.splitlines(keepends=True)


def encode(tok, data: bytes, separator: bytes) -> np.ndarray:
    """Token ids of a byte stream: each document encoded alone, the separator's tokens between."""
    parts = pieces(data, separator)
    sep_ids = tok.encode(separator.decode("utf-8"), add_special_tokens=False).ids if separator else []
    out: list[np.ndarray] = []
    for i in range(0, len(parts), BATCH_DOCUMENTS):
        batch = parts[i : i + BATCH_DOCUMENTS]
        encoded = tok.encode_batch([p.decode("utf-8", errors="replace") for p in batch], add_special_tokens=False)
        for j, e in enumerate(encoded):
            out.append(np.asarray(e.ids, dtype=np.int64))
            if sep_ids and i + j < len(parts) - 1:
                out.append(np.asarray(sep_ids, dtype=np.int64))
    return np.concatenate(out) if out else np.empty(0, dtype=np.int64)


def tokenized_corpus(corpus, cfg):
    """The byte ``corpus`` of data settings ``cfg`` under ``cfg.tokenizer`` (built once, then read
    from its cache); its fingerprint keeps the text's hash and adds the tokenizer's record and the
    bytes per token of the training split."""
    from posbench.data import Corpus

    sep = cfg.doc_separator.encode()
    root = Path(cfg.cache_dir).expanduser()
    tok, text, record, trained = tokenizers.load(
        cfg.tokenizer, corpus.fingerprint["hash"], root,
        lambda: (p.decode("utf-8", errors="replace") for p in pieces(bytes(corpus.train), sep) if p))
    built_also = tuple(p for p in (corpus.cache if corpus.built else None, trained) if p is not None)
    cache = root / f"{cfg.name}-{corpus.fingerprint['hash']}-{record['name']}-{record['sha256']}"
    built = not (cache / "fingerprint.json").exists()
    if built:
        log.info("tokenizing corpus %r with %s into %s (once)", cfg.name, record["name"], cache)
        try:
            _build(cache, tok, text, corpus, sep, record)
        except OSError as e:
            raise PosbenchError(f"cannot write the token cache in {str(cache.parent)!r} ({e.strerror or e}); "
                                "set data.cache_dir to a writable folder") from None
    meta = json.loads((cache / "fingerprint.json").read_text())
    dtype = tokenizers.token_dtype(record["vocab_size"])
    fingerprint = {**corpus.fingerprint, "tokenizer": record, "bytes_per_token": meta["bytes_per_token"]}
    return Corpus(train=np.memmap(cache / "train.bin", dtype=dtype, mode="r"),
                  val=np.memmap(cache / "val.bin", dtype=dtype, mode="r"), fingerprint=fingerprint, cache=cache,
                  built=built, val_text=corpus.val, tokenizer=tok, built_also=built_also)


def _build(cache: Path, tok, text: str, corpus, sep: bytes, record: dict) -> None:
    """Tokenize into a temporary folder renamed into place: a crash leaves nothing half written."""
    dtype = tokenizers.token_dtype(record["vocab_size"])
    make_dirs(cache.parent)
    tmp = private_tempdir(cache.parent, f".{cache.name}.")
    try:
        counts = {}
        for split, data in (("train", corpus.train), ("val", corpus.val)):
            ids = encode(tok, bytes(data), sep)
            ids.astype(dtype).tofile(tmp / f"{split}.bin")
            counts[split] = (len(ids), len(data))
        (tmp / "tokenizer.json").write_text(text)  # the exact file these tokens came from
        (tmp / "fingerprint.json").write_text(json.dumps({
            **corpus.fingerprint, "tokenizer": record, "train_tokens": counts["train"][0], "val_tokens": counts["val"][0],
            "bytes_per_token": round(counts["train"][1] / max(counts["train"][0], 1), 4)}, indent=1))
        publish_dir(tmp, cache)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- the scored text ---------------------------------------------------------------------------


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


def _char_start(text: np.ndarray, i: int) -> int:
    """``i``, or the start of the UTF-8 character it falls inside (continuation bytes are 10xxxxxx)."""
    while 0 < i < len(text) and (int(text[i]) & 0xC0) == 0x80:
        i -= 1
    return i


def scored_stream(corpus, eval_cfg, train_len: int, separator: str) -> tuple[np.ndarray, Segments]:
    """(the validation tokens with a boundary at every scored segment's ends, the segments in token
    coordinates with their own token and byte counts) of a corpus under a subword tokenizer, for
    the settings ``eval_cfg`` (in_bytes applied here). Checked: segments exist, and the longest
    window has its history before the first one. Computed once per corpus and settings."""
    eval_cfg = in_bytes(eval_cfg, train_len, corpus.fingerprint)
    if bad := [p for p in eval_cfg.protocols if not issubclass(PROTOCOLS.get(p), _Stream)]:
        raise PosbenchError(f"eval.protocols: {bad[0]} scores the last tokens of documents, other text under another "
                            f"tokenizer; with data.tokenizer={tokenizers_name(corpus)} use nonoverlapping, sliding "
                            "or press_sliding")
    S0, seg = first_scored(eval_cfg, train_len), segment_length(eval_cfg, train_len)
    key = (S0, seg, eval_cfg.scored_tokens, separator)
    # by what the corpus is (its text and its tokenizer), never by the object's id, which a later corpus can reuse
    name = (corpus.fingerprint.get("hash"), json.dumps(corpus.fingerprint.get("tokenizer"), sort_keys=True, default=str))
    if key not in _SCORED.setdefault(name, {}):
        _SCORED[name][key] = _align(corpus, S0, seg, eval_cfg.scored_tokens, separator)
    tokens, segments = _SCORED[name][key]
    longest = max(eval_lengths(train_len, eval_cfg.multiples))
    if len(segments.starts) and segments.starts[0] < longest:
        bpt = corpus.fingerprint["bytes_per_token"]
        raise PosbenchError(
            f"eval.first_scored={S0} bytes leave {int(segments.starts[0])} tokens before the first scored segment, fewer "
            f"than the longest evaluation window ({longest} tokens, ~{round(longest * bpt)} bytes at {bpt:.2f} bytes per "
            f"token); set eval.first_scored >= {math.ceil(longest * bpt * 1.25)} (it changes which bytes are scored)")
    return tokens, segments


_SCORED: dict[int, dict] = {}  # id(corpus) -> settings -> (tokens, segments): one tokenization per evaluation


def tokenizers_name(corpus) -> str:
    return (corpus.fingerprint.get("tokenizer") or {}).get("kind", "byte")


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

