"""Which tokens a corpus becomes: bytes (the default), or a subword tokenizer of HF ``tokenizers``.

* ``byte``: every UTF-8 byte is a token (vocabulary 256), as posbench always did.
* ``bpe``: a byte-level BPE (GPT-2's scheme, Radford et al. 2019: the ``ByteLevel`` pre-tokenizer
  and decoder of HF ``tokenizers``, whose ``BpeTrainer`` learns the merges) trained on the corpus's
  training split at ``vocab_size`` tokens, offline, and cached by the corpus's hash, the settings
  and the library's version: a fresh machine trains it once (about 10 s on the stdlib corpus).
* ``file``: a ``tokenizer.json`` of the user's (``Tokenizer.from_file``).
* ``hub``: a tokenizer on the Hugging Face hub by name (``Tokenizer.from_pretrained``), when the
  hub can be reached; refused in one line when it cannot.

Every tokenizer but ``byte`` is identified by the sha256 of its ``tokenizer.json``: the token
cache is keyed on it, every run records it, and a cached BPE whose file was edited since it was
trained is refused rather than reused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from posbench.core.errors import PosbenchError
from posbench.core.files import atomic_write_text, make_dirs
from posbench.data.hub import _hub_reachable

log = logging.getLogger("posbench")

KINDS = ("byte", "bpe", "file", "hub")
BYTE_VOCAB = 256


@dataclass(frozen=True)
class TokenizerConfig:
    """``data.tokenizer`` (``data/tokenizer=`` in conf/data/tokenizer/: byte, bpe, file, hub)."""

    kind: str = "byte"  # byte | bpe | file | hub
    vocab_size: int = 1024  # bpe: tokens, the 256 bytes included
    path: Optional[str] = None  # file: a tokenizer.json
    name: Optional[str] = None  # hub: a repository with a tokenizer.json (e.g. gpt2)

    def check(self) -> None:
        if self.kind not in KINDS:
            raise PosbenchError(f"unknown data.tokenizer.kind {self.kind!r}; valid: {', '.join(KINDS)}")
        if self.kind == "bpe" and not BYTE_VOCAB < self.vocab_size <= 2**32:
            raise PosbenchError(f"data.tokenizer.vocab_size must be above {BYTE_VOCAB} (the bytes, which a byte-level "
                                f"BPE always holds), got {self.vocab_size}")
        if self.kind == "file":
            if not self.path:
                raise PosbenchError("data.tokenizer.kind=file needs data.tokenizer.path (a tokenizer.json)")
            if not Path(self.path).expanduser().is_file():
                raise PosbenchError(f"data.tokenizer.path {self.path!r} is not a file; give a tokenizer.json "
                                    "(or data/tokenizer=bpe to train one on the corpus)")
        if self.kind == "hub" and not self.name:
            raise PosbenchError("data.tokenizer.kind=hub needs data.tokenizer.name (e.g. gpt2)")

    @property
    def is_bytes(self) -> bool:
        return self.kind == "byte"

    @property
    def label(self) -> str:
        """How run ids and reports name it: ``bpe1024``, ``file-<stem>``, ``hub-<name>``."""
        return {"byte": "byte", "bpe": f"bpe{self.vocab_size}",
                "file": f"file-{Path(self.path or '').stem}", "hub": f"hub-{(self.name or '').replace('/', '-')}"}[self.kind]


def library_version() -> str:
    import tokenizers

    return tokenizers.__version__


def file_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def token_dtype(vocab_size: int):
    """The narrowest unsigned type that holds every token id (uint8 for bytes: the caches of old)."""
    import numpy as np

    return np.uint8 if vocab_size <= 2**8 else np.uint16 if vocab_size <= 2**16 else np.uint32


# -- the tokenizers that are not bytes -----------------------------------------------------------


def from_file(path: Path):
    """``tokenizers.Tokenizer.from_file``; a file it cannot read is one line."""
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_file(str(path))
    except Exception as e:  # noqa: BLE001 - the library raises a bare Exception for a malformed file
        raise PosbenchError(f"{str(path)!r} is not a tokenizer.json that HF tokenizers can read "
                            f"({str(e).splitlines()[0][:120]}); give a file saved by Tokenizer.save") from None


def from_hub(name: str):
    """``tokenizers.Tokenizer.from_pretrained(name)`` where the hub can be reached (or the file is in
    the Hugging Face cache); one line naming the alternatives where it cannot."""
    from tokenizers import Tokenizer

    offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
    alternatives = ("use data/tokenizer=bpe (trained offline on the corpus) or data/tokenizer=file "
                    "data.tokenizer.path=<a tokenizer.json>")
    if offline or not _hub_reachable():
        # from_pretrained would wait on retries before failing; the cache of huggingface_hub may hold it
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(name, "tokenizer.json")
        except Exception:  # noqa: BLE001 - an invalid repository name: not cached
            cached = None
        if isinstance(cached, str):
            return from_file(Path(cached))
        why = "HF_HUB_OFFLINE is set" if offline else "the Hugging Face hub cannot be reached"
        raise PosbenchError(f"data.tokenizer.name={name!r} is a hub tokenizer and {why} (nor is it in the "
                            f"Hugging Face cache); {alternatives}")
    try:
        return Tokenizer.from_pretrained(name)
    except Exception as e:  # noqa: BLE001 - no such repository, no tokenizer.json in it, a network error
        raise PosbenchError(f"cannot load hub tokenizer {name!r} ({str(e).splitlines()[0][:120]}); "
                            f"{alternatives}") from None


def vocab_size(cfg: TokenizerConfig) -> int:
    """The model's vocabulary under this tokenizer. A BPE's is its setting (known before training:
    a corpus too small to learn that many tokens is refused when it is trained); a file's or a
    hub tokenizer's is read from it."""
    if cfg.kind == "byte":
        return BYTE_VOCAB
    if cfg.kind == "bpe":
        return cfg.vocab_size
    cfg.check()
    tok = from_file(Path(cfg.path).expanduser()) if cfg.kind == "file" else from_hub(cfg.name)
    return tok.get_vocab_size()


def train_bpe(texts: Iterable[str], size: int):
    """A byte-level BPE of ``size`` tokens learned from ``texts`` (HF tokenizers' BpeTrainer, with
    the 256 byte symbols as its initial alphabet, so that any text encodes, and no special tokens:
    documents are joined by the corpus's own separator)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=[], show_progress=False)
    tok.train_from_iterator(texts, trainer)
    if tok.get_vocab_size() < size:
        # fewer merges than asked: the model's table would have rows no token reads
        raise PosbenchError(f"data.tokenizer.vocab_size={size}: the training split holds only "
                            f"{tok.get_vocab_size()} distinct tokens' worth of merges; use a vocab_size of at most "
                            f"{tok.get_vocab_size()} or a larger corpus")
    return tok


def cached_bpe(cfg: TokenizerConfig, corpus_hash: str, cache_root: Path, texts) -> tuple[object, Path, bool]:
    """(the BPE of ``cfg`` for the corpus of ``corpus_hash``, its tokenizer.json, whether it was
    trained now): trained from
    ``texts()`` once, then read from ``cache_root/tokenizers``. A cached file whose hash is not
    the one recorded when it was trained (an edit) is refused, never silently reused."""
    folder = cache_root / "tokenizers" / f"bpe{cfg.vocab_size}-{corpus_hash}-tokenizers{library_version()}"
    path, meta = folder / "tokenizer.json", folder / "trained.json"
    if path.is_file() and meta.is_file():
        recorded = recorded_hash(meta)
        if recorded is None:
            # posbench's own bookkeeping, written atomically: a torn disk or a stray edit. Trained again (from the
            # corpus alone, in seconds) rather than refused: the user has nothing to fix that posbench cannot.
            log.warning("the cached BPE tokenizer's record %s is damaged (not the JSON posbench writes); training the "
                        "tokenizer again into %s", meta, folder)
        else:
            if (now := file_hash(path)) != recorded:
                raise PosbenchError(f"the cached BPE tokenizer {str(path)!r} was changed since it was trained (sha256 "
                                    f"{now}, trained as {recorded}); delete {str(folder)!r} to train it again")
            return from_file(path), path, False
    log.info("training a byte-level BPE of %d tokens on the training split (once; cached in %s)", cfg.vocab_size, folder)
    tok = train_bpe(texts(), cfg.vocab_size)
    make_dirs(folder)
    atomic_write_text(path, tok.to_str())
    # the meta file last: a folder without it is an interrupted training, trained again
    atomic_write_text(meta, json.dumps({"sha256": file_hash(path), "vocab_size": cfg.vocab_size,
                                        "corpus_hash": corpus_hash, "tokenizers": library_version()}, indent=1))
    return tok, path, True


def recorded_hash(meta: Path) -> str | None:
    """The sha256 a cached BPE's ``trained.json`` recorded, or None when the file is not what cached_bpe writes."""
    try:
        recorded = json.loads(meta.read_text())["sha256"]
    except (ValueError, KeyError, TypeError):  # not JSON, not UTF-8, no record, not a mapping
        return None
    return recorded if isinstance(recorded, str) else None


def load(cfg: TokenizerConfig, corpus_hash: str, cache_root: Path, texts) -> tuple[object, str, dict, Path | None]:
    """(the tokenizer, its tokenizer.json text, what a run records of it: kind, name, vocabulary,
    sha256 of the file, library version; the folder of a BPE trained by this call) for a non-byte
    ``cfg``; ``texts()``: the training split's documents, read only when a BPE has to be trained."""
    cfg.check()
    trained = None
    if cfg.kind == "bpe":
        tok, path, fresh = cached_bpe(cfg, corpus_hash, cache_root, texts)
        text, trained = path.read_text(), (path.parent if fresh else None)
    else:
        tok = from_file(Path(cfg.path).expanduser()) if cfg.kind == "file" else from_hub(cfg.name)
        text = tok.to_str() if cfg.kind == "hub" else Path(cfg.path).expanduser().read_text()
    record = {"kind": cfg.kind, "name": cfg.label, "vocab_size": tok.get_vocab_size(),
              "sha256": hashlib.sha256(text.encode()).hexdigest()[:16], "tokenizers": library_version()}
    return tok, text, record, trained
