"""A corpus under a subword tokenizer: its token caches, and the scored text chosen in bytes.

The byte cache of posbench/data/corpus.py is tokenized into a cache of its own, keyed on the text's hash
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
(protocols.StreamProtocol.plan). Lengths (train_len and its multiples) stay in tokens.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.files import building_dir, make_dirs, publish_dir
from posbench.data import tokenizer as tokenizers
from posbench.data.corpus import Corpus

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

    sep = cfg.doc_separator.encode()
    root = Path(cfg.cache_dir).expanduser()
    tok, text, record, trained = tokenizers.load(
        cfg.tokenizer, corpus.fingerprint["hash"], root,
        lambda: (p.decode("utf-8", errors="replace") for p in pieces(bytes(corpus.train), sep) if p))
    built_also = tuple(p for p in (corpus.cache if corpus.built else None, trained) if p is not None)
    cache = root / f"{cfg.name}-{corpus.fingerprint['hash']}-{record['name']}-{record['sha256']}"
    built = not (cache / "fingerprint.json").exists()
    if not built and _cache_record(cache) is None:
        # written last and atomically by _build: a damaged one is a torn disk or a stray edit; the cache is
        # made from the corpus and the tokenizer alone, so it is made again rather than refused
        log.warning("the token cache's record %s is damaged (not the JSON posbench writes); tokenizing again",
                    cache / "fingerprint.json")
        shutil.rmtree(cache, ignore_errors=True)
        built = True
    if built:
        log.info("tokenizing corpus %r with %s into %s (once)", cfg.name, record["name"], cache)
        try:
            _build(cache, tok, text, corpus, sep, record)
        except OSError as e:
            raise PosbenchError(f"cannot write the token cache in {str(cache.parent)!r} ({e.strerror or e}); "
                                "set data.cache_dir to a writable folder") from None
    meta = _cache_record(cache)
    dtype = tokenizers.token_dtype(record["vocab_size"])
    fingerprint = {**corpus.fingerprint, "tokenizer": record, "bytes_per_token": meta["bytes_per_token"]}
    return Corpus(train=np.memmap(cache / "train.bin", dtype=dtype, mode="r"),
                  val=np.memmap(cache / "val.bin", dtype=dtype, mode="r"), fingerprint=fingerprint, cache=cache,
                  built=built, val_text=corpus.val, tokenizer=tok, built_also=built_also)


def _cache_record(cache: Path) -> dict | None:
    """A token cache's fingerprint.json, or None when it is not the record _build writes."""
    try:
        meta = json.loads((cache / "fingerprint.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) and "bytes_per_token" in meta else None


def _build(cache: Path, tok, text: str, corpus, sep: bytes, record: dict) -> None:
    """Tokenize into a temporary folder renamed into place: a crash leaves nothing half written."""
    dtype = tokenizers.token_dtype(record["vocab_size"])
    make_dirs(cache.parent)
    with building_dir(cache.parent, f".{cache.name}.") as tmp:  # removed however the block ends
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


# -- the scored text ---------------------------------------------------------------------------


def tokenizers_name(corpus) -> str:
    return (corpus.fingerprint.get("tokenizer") or {}).get("kind", "byte")
