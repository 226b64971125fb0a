"""Corpora as byte tokens: where the text comes from (stdlib, the Python docs, local files, the
hub), its split into training and validation documents, and its byte cache on disk.

Every corpus goes through the same path: a ``datasets`` DatasetDict with a train and a validation
split of text documents -> UTF-8 bytes joined by a separator -> two uint8 files in the cache (the
byte tokens). A subword tokenizer (``data.tokenizer``, posbench/data/tokenizer.py) then tokenizes those
bytes into a second cache of its own (posbench/data/tokens.py). The sources differ only in how that
DatasetDict is made:

* ``stdlib``: the running interpreter's standard library (``sysconfig.get_paths()["stdlib"]``),
  about 30 MB of ``.py`` files on every Python install: real text nobody here wrote, no network.
* ``pydocs``: English prose, the Python documentation's reST sources from Debian's ``python3-doc``
  package (posbench/data/pydocs.py finds them, or says how to install them): the same document split
  and fingerprint as ``stdlib``, so every verdict can be read on prose too.
* ``local``: a text file, or a folder of files matching a glob.
* ``hub``: a Hugging Face dataset (wikitext-103, pg19, enwik8) or a local dataset folder.

File corpora are split by document, deterministically, on a hash of each file's relative path,
so adding a file never moves another file between splits.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.files import building_dir, make_dirs, publish_dir
from posbench.data.hub import _force_hub_offline, _hub_reachable
from posbench.data.pydocs import docs_root
from posbench.data.tokenizer import TokenizerConfig

log = logging.getLogger("posbench")

VOCAB_SIZE = 256  # byte-level tokens
SOURCES = ("stdlib", "pydocs", "local", "hub")
DOC_SEPARATOR = "\0"  # never occurs in source text; marks document boundaries in the token stream
EXCLUDED_STDLIB_DIRS = {"site-packages", "dist-packages", "__pycache__"}


@dataclass(frozen=True)
class DataConfig:
    """The corpus (``data=`` in conf/data/: stdlib, pydocs, local, wikitext103, pg19, enwik8)."""

    name: str = "stdlib"
    source: str = "stdlib"  # stdlib | pydocs | local | hub
    path: Optional[str] = None  # local: file or folder; stdlib, pydocs: override of the root folder
    glob: str = "**/*.txt"  # local and pydocs folders: which files are documents
    hub_name: Optional[str] = None  # hub: dataset name (or a local dataset folder)
    hub_config: Optional[str] = None
    text_field: str = "text"
    train_split: str = "train"
    val_split: Optional[str] = "validation"  # None: hold out the last val_fraction of the train stream
    val_fraction: float = 0.05  # file corpora: share of documents held out, chosen by a hash of the path
    max_train_bytes: Optional[int] = None  # cap for huge corpora (pg19)
    doc_separator: str = "\0"  # written between documents (rows) in the byte stream
    cache_dir: str = "~/.cache/posbench"
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)  # byte (the default), bpe, file, hub

    def check(self) -> None:
        if self.source not in SOURCES:
            raise PosbenchError(f"unknown data.source {self.source!r}; valid: {', '.join(SOURCES)}")
        if not 0 < self.val_fraction < 1:
            raise PosbenchError(f"data.val_fraction must be in (0, 1), got {self.val_fraction}")
        if self.max_train_bytes is not None and self.max_train_bytes < 1:
            raise PosbenchError(f"data.max_train_bytes must be positive (or null), got {self.max_train_bytes}")
        if len(self.doc_separator.encode()) > 1:
            raise PosbenchError(f"data.doc_separator must be one byte (or empty), got {self.doc_separator!r}")
        self.tokenizer.check()


@dataclass
class Corpus:
    train: np.ndarray  # token ids: uint8 (bytes), uint16 or uint32 (a subword tokenizer's)
    val: np.ndarray
    fingerprint: dict  # "hash": the text's (whatever the tokenizer); "tokenizer": a subword tokenizer's record
    cache: Optional[Path] = None  # its token cache folder
    built: bool = False  # this load built the cache (a refused command removes it again: remove_cache)
    val_text: Optional[np.ndarray] = None  # the validation split's bytes (None: the tokens are bytes)
    tokenizer: object = None  # a subword tokenizer (HF tokenizers.Tokenizer); None: bytes
    built_also: tuple = ()  # other folders this load made (the byte cache, a trained BPE): removed with it

    @property
    def is_bytes(self) -> bool:
        return self.tokenizer is None

    @property
    def val_bytes(self) -> np.ndarray:
        """The validation split as bytes: the scored text is chosen in bytes, whatever the tokenizer."""
        return self.val if self.val_text is None else self.val_text


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


# -- file lists and fingerprints ----------------------------------------------------------------


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def list_documents(root: Path, pattern: str) -> list[Path]:
    """Sorted document files under root (third-party packages and caches excluded)."""
    files = [
        p
        for p in root.glob(pattern)
        if p.is_file() and not EXCLUDED_STDLIB_DIRS.intersection(p.relative_to(root).parts)
    ]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def is_validation_document(relpath: str, val_fraction: float) -> bool:
    """Deterministic document-level split from a hash of the relative path."""
    bucket = int(hashlib.sha1(relpath.encode()).hexdigest()[:8], 16) % 10_000
    return bucket < val_fraction * 10_000


def files_fingerprint(root: Path, files: list[Path], extra: dict) -> dict:
    """Settings + a hash of every document's relative path and *content*: an edit that keeps a
    file's size still makes a new cache entry (the hash is recorded with every run)."""
    h = hashlib.sha256(json.dumps(extra, sort_keys=True).encode())
    total = undecodable = 0
    for f in files:
        try:
            data = f.read_bytes()
        except OSError as e:
            raise PosbenchError(f"cannot read data file {str(f)!r}: {e.strerror}; fix its permissions or remove it") from None
        total += len(data)
        undecodable += _undecodable_bytes(data)
        h.update(f"{f.relative_to(root).as_posix()}\t{len(data)}\n".encode())
        h.update(hashlib.sha256(data).digest())
    digest = h.hexdigest()[:16]
    if undecodable and (root, digest) not in _TOLD:  # once per process (a command loads a corpus more than once)
        _TOLD.add((root, digest))
        # a few stray bytes (the stdlib has test files in Latin-1) are noise; a real share is a warning
        share = undecodable / max(total, 1)
        log.log(logging.WARNING if share > 1e-3 else logging.DEBUG,
                "%.2f%% of the bytes under %s are not UTF-8 text (%d bytes%s); each is read as U+FFFD",
                100 * share, root, undecodable, ": binary files?" if share > 0.01 else "")
    return {**extra, "documents": len(files), "bytes": total, "hash": digest}


_TOLD: set[tuple[Path, str]] = set()  # corpora whose undecodable bytes were reported


def _undecodable_bytes(data: bytes) -> int:
    try:
        data.decode("utf-8")
        return 0
    except UnicodeDecodeError:
        return len(data) - len(data.decode("utf-8", errors="ignore").encode("utf-8"))


def _file_source(cfg) -> tuple[Path, list[Path], dict]:
    if cfg.source == "stdlib":
        root = Path(cfg.path).expanduser() if cfg.path else stdlib_root()
        files = list_documents(root, "**/*.py")
        extra = {"source": "stdlib", "python": sys.version.split()[0]}
    elif cfg.source == "pydocs":  # like stdlib: no path in the fingerprint, so the cache key is the same on every machine
        root, version = docs_root(cfg.path)
        files = list_documents(root, cfg.glob)
        extra = {"source": "pydocs", "python_docs": version, "glob": cfg.glob}
    else:
        if not cfg.path:
            raise PosbenchError("data.source=local needs data.path (a text file or a folder)")
        path = Path(cfg.path).expanduser()
        if not path.exists():
            raise PosbenchError(f"data.path {str(path)!r} does not exist; give an existing text file or folder")
        root, files = (path.parent, [path]) if path.is_file() else (path, list_documents(path, cfg.glob))
        extra = {"source": "local", "path": str(path.resolve()), "glob": cfg.glob}
    if not files:
        raise PosbenchError(f"no documents under {str(root)!r} match {'**/*.py' if cfg.source == 'stdlib' else cfg.glob!r}")
    extra.update(val_fraction=cfg.val_fraction, doc_separator=cfg.doc_separator, max_train_bytes=cfg.max_train_bytes)
    return root, files, files_fingerprint(root, files, extra)


# -- building the DatasetDict -------------------------------------------------------------------


def _load_files(root: Path, files: list[Path], val_fraction: float, hf_cache: Path):
    import datasets

    val = [f for f in files if is_validation_document(f.relative_to(root).as_posix(), val_fraction)]
    held_out = set(val)
    train = [f for f in files if f not in held_out]
    if not train:  # every document hashed to validation (a folder of one or two files): tail split instead
        train, val = val, []
    data_files = {"train": [str(f) for f in train]}
    if val:
        data_files["validation"] = [str(f) for f in val]
    # the arrow copy datasets makes lives in our temporary build folder, not in ~/.cache/huggingface
    return datasets.load_dataset(
        "text", data_files=data_files, sample_by="document", encoding_errors="replace", cache_dir=str(hf_cache)
    )


def _load_hub(cfg):
    import datasets

    name = cfg.hub_name
    if not name:
        raise PosbenchError("data.source=hub needs data.hub_name (e.g. Salesforce/wikitext)")
    local = Path(name).expanduser()
    if local.exists():  # a dataset folder on disk: the same loader, no hub involved
        name = str(local)
    elif not _hub_reachable():
        _force_hub_offline()
    try:
        ds = datasets.load_dataset(name, cfg.hub_config)
    except Exception as e:  # datasets raises many types for "not there"; all mean the same to a user
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise PosbenchError(
            f"cannot load hub dataset {name!r} (config {cfg.hub_config!r}): {msg}; "
            "it must be reachable or already in the Hugging Face cache"
        ) from e
    for split in filter(None, (cfg.train_split, cfg.val_split)):
        if split not in ds:
            raise PosbenchError(f"dataset {name!r} has no split {split!r}; it has: {', '.join(ds)}")
    if cfg.text_field not in ds[cfg.train_split].column_names:
        raise PosbenchError(
            f"dataset {name!r} has no column {cfg.text_field!r}; columns: {', '.join(ds[cfg.train_split].column_names)}"
        )
    out = {"train": ds[cfg.train_split]}
    if cfg.val_split:
        out["validation"] = ds[cfg.val_split]
    return datasets.DatasetDict(out)


def hub_fingerprint(cfg) -> dict:
    keys = ("hub_name", "hub_config", "text_field", "train_split", "val_split", "val_fraction", "max_train_bytes", "doc_separator")
    extra = {"source": "hub", **{k: getattr(cfg, k) for k in keys}}
    return {**extra, "hash": hashlib.sha256(json.dumps(extra, sort_keys=True).encode()).hexdigest()[:16]}


# -- tokens on disk -----------------------------------------------------------------------------


def _write_tokens(texts: Iterable[str], path: Path, separator: bytes, max_bytes: int | None) -> int:
    written = 0
    with open(path, "wb") as f:
        for text in texts:
            chunk = text.encode("utf-8") + separator
            if max_bytes is not None and written + len(chunk) > max_bytes:
                chunk = chunk[: max_bytes - written]
            f.write(chunk)
            written += len(chunk)
            if max_bytes is not None and written >= max_bytes:
                break
    return written


def _iter_texts(split, field: str) -> Iterable[str]:
    for batch in split.iter(batch_size=1000):
        yield from batch[field]


def load_byte_corpus(cfg) -> Corpus:
    """Load (building once, then from the cache) the byte tokens of the configured corpus."""
    if cfg.source == "hub":
        fingerprint, build = hub_fingerprint(cfg), lambda tmp: _load_hub(cfg)
        field = cfg.text_field
    else:
        root, files, fingerprint = _file_source(cfg)
        build, field = (lambda tmp: _load_files(root, files, cfg.val_fraction, tmp / "hf")), "text"
    fingerprint = {"name": cfg.name, **fingerprint}
    cache = Path(cfg.cache_dir).expanduser() / f"{cfg.name}-{fingerprint['hash']}"
    built = not (cache / "fingerprint.json").exists()
    if built:
        log.info("building the token cache of corpus %r in %s (once)", cfg.name, cache)
        try:
            _build_cache(cache, build, field, cfg, fingerprint)
        except OSError as e:
            raise PosbenchError(f"cannot write the token cache in {str(cache.parent)!r} ({e.strerror or e}); "
                                "set data.cache_dir to a writable folder") from None
    train = np.memmap(cache / "train.bin", dtype=np.uint8, mode="r")
    val = np.memmap(cache / "val.bin", dtype=np.uint8, mode="r")
    return Corpus(train=train, val=val, fingerprint=fingerprint, cache=cache, built=built)


def remove_cache(corpus: Corpus) -> None:
    """Remove the token cache that loading ``corpus`` built, when the command that loaded it is
    refused: a refused command leaves nothing behind (a cache it did not build stays)."""
    if corpus.built and corpus.cache is not None:
        shutil.rmtree(corpus.cache, ignore_errors=True)
    for folder in corpus.built_also:
        shutil.rmtree(folder, ignore_errors=True)


def _build_cache(cache: Path, build, field: str, cfg, fingerprint: dict) -> None:
    """Tokenize into a temporary folder and rename it into place, so a crash or an error leaves
    nothing behind (no half cache, no temporary folder)."""
    import datasets

    datasets.disable_progress_bars()  # one line says what happens; no per-file bars
    separator = cfg.doc_separator.encode()
    make_dirs(cache.parent)
    with building_dir(cache.parent, f".{cache.name}.") as tmp:  # removed however the block ends
        ds = build(tmp)
        n_train = _write_tokens(_iter_texts(ds["train"], field), tmp / "train.bin", separator, cfg.max_train_bytes)
        if "validation" in ds:
            n_val = _write_tokens(_iter_texts(ds["validation"], field), tmp / "val.bin", separator, None)
        else:  # one stream only (a single file, enwik8): the last val_fraction of it is validation
            stream = (tmp / "train.bin").read_bytes()
            cut = int(len(stream) * (1 - cfg.val_fraction))
            (tmp / "train.bin").write_bytes(stream[:cut])
            (tmp / "val.bin").write_bytes(stream[cut:])
            n_train, n_val = cut, len(stream) - cut
        if n_train == 0 or n_val == 0:
            raise PosbenchError(f"corpus {cfg.name!r} is empty after splitting (train {n_train} bytes, validation {n_val} bytes)")
        shutil.rmtree(tmp / "hf", ignore_errors=True)
        (tmp / "fingerprint.json").write_text(json.dumps({**fingerprint, "train_bytes": n_train, "val_bytes": n_val}, indent=1))
        publish_dir(tmp, cache)


def corpus_change(recorded: dict, now: dict) -> str | None:
    """None when ``recorded`` (a run's corpus fingerprint) is the corpus ``now`` is; else what
    changed, in words (``Python 3.11.4 -> 3.12.1``, ``documents 40 -> 41, bytes ... -> ...``)."""
    was, tok = (recorded.get("tokenizer") or {}).get("sha256"), (now.get("tokenizer") or {}).get("sha256")
    if recorded.get("hash") == now.get("hash") and was != tok:
        return f"tokenizer {was or 'bytes'} -> {tok or 'bytes'}"
    if recorded.get("hash") == now.get("hash"):
        return None
    words = {"python": "Python", "python_docs": "Python docs"}
    changes = [f"{words.get(k, k)} {recorded[k]} -> {now.get(k)}"
               for k in ("python", "python_docs", "path", "hub_name", "hub_config", "documents", "bytes") if k in recorded and recorded[k] != now.get(k)]
    return ", ".join(changes) or ("same size, other content" if "documents" in recorded else "other settings")


def corpus_stats(corpus: Corpus) -> dict:
    return {**corpus.fingerprint, "train_tokens": int(len(corpus.train)), "val_tokens": int(len(corpus.val))}
