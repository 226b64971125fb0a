"""Corpora, byte-level tokens, the on-disk token cache and batching.

Every corpus goes through the same path: a ``datasets`` DatasetDict with a train and a validation
split of text documents -> UTF-8 bytes joined by a separator -> two uint8 files in the cache. The
sources differ only in how that DatasetDict is made:

* ``stdlib``: the running interpreter's standard library (``sysconfig.get_paths()["stdlib"]``),
  about 30 MB of ``.py`` files on every Python install: real text nobody here wrote, no network.
* ``local``: a text file, or a folder of files matching a glob.
* ``hub``: a Hugging Face dataset (wikitext-103, pg19, enwik8) or a local dataset folder.

File corpora are split by document, deterministically, on a hash of each file's relative path,
so adding a file never moves another file between splits.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable
from urllib.parse import urlparse

import numpy as np
import torch

from posbench.errors import PosbenchError

log = logging.getLogger("posbench")

VOCAB_SIZE = 256  # byte-level tokens
DOC_SEPARATOR = "\0"  # never occurs in source text; marks document boundaries in the token stream
EXCLUDED_STDLIB_DIRS = {"site-packages", "dist-packages", "__pycache__"}


@dataclass
class Corpus:
    train: np.ndarray  # uint8 tokens (bytes)
    val: np.ndarray
    fingerprint: dict


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
    h = hashlib.sha256(json.dumps(extra, sort_keys=True).encode())
    total = 0
    for f in files:
        size = f.stat().st_size
        total += size
        h.update(f"{f.relative_to(root).as_posix()}\t{size}\n".encode())
    return {**extra, "documents": len(files), "bytes": total, "hash": h.hexdigest()[:16]}


def _file_source(cfg) -> tuple[Path, list[Path], dict]:
    if cfg.source == "stdlib":
        root = Path(cfg.path).expanduser() if cfg.path else stdlib_root()
        files = list_documents(root, "**/*.py")
        extra = {"source": "stdlib", "python": sys.version.split()[0]}
    else:
        if not cfg.path:
            raise PosbenchError("data.source=local needs data.path (a text file or a folder)")
        path = Path(cfg.path).expanduser()
        if not path.exists():
            raise PosbenchError(f"data.path {str(path)!r} does not exist; give an existing text file or folder")
        root, files = (path.parent, [path]) if path.is_file() else (path, list_documents(path, cfg.glob))
        extra = {"source": "local", "path": str(path.resolve()), "glob": cfg.glob}
    if not files:
        raise PosbenchError(f"no documents under {str(root)!r} match {cfg.glob if cfg.source == 'local' else '**/*.py'!r}")
    extra.update(val_fraction=cfg.val_fraction, doc_separator=cfg.doc_separator, max_train_bytes=cfg.max_train_bytes)
    return root, files, files_fingerprint(root, files, extra)


# -- building the DatasetDict -------------------------------------------------------------------


def _load_files(root: Path, files: list[Path], val_fraction: float):
    import datasets

    val = [f for f in files if is_validation_document(f.relative_to(root).as_posix(), val_fraction)]
    held_out = set(val)
    train = [f for f in files if f not in held_out]
    if not train:  # every document hashed to validation (a folder of one or two files): tail split instead
        train, val = val, []
    data_files = {"train": [str(f) for f in train]}
    if val:
        data_files["validation"] = [str(f) for f in val]
    return datasets.load_dataset(
        "text", data_files=data_files, sample_by="document", encoding_errors="replace"
    )


def _hub_reachable(timeout: float = 3.0) -> bool:
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def _force_hub_offline() -> None:
    """Switch the hub clients to offline mode so a missing dataset fails at once, not after retries."""
    import datasets
    import huggingface_hub

    os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    datasets.config.HF_HUB_OFFLINE = True
    huggingface_hub.constants.HF_HUB_OFFLINE = True


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
    extra = {"source": "hub", **{k: cfg.get(k) for k in keys}}
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


def load_corpus(cfg) -> Corpus:
    """Load (building once, then from the cache) the byte tokens of the configured corpus."""
    if cfg.source == "hub":
        fingerprint, build = hub_fingerprint(cfg), lambda: _load_hub(cfg)
        field = cfg.text_field
    else:
        root, files, fingerprint = _file_source(cfg)
        build, field = (lambda: _load_files(root, files, cfg.val_fraction)), "text"
    fingerprint = {"name": cfg.name, **fingerprint}
    cache = Path(cfg.cache_dir).expanduser() / f"{cfg.name}-{fingerprint['hash']}"
    if not (cache / "fingerprint.json").exists():
        import datasets

        log.info("building the token cache of corpus %r in %s (once)", cfg.name, cache)
        datasets.disable_progress_bars()  # one line above says what happens; no per-file bars
        _build_cache(cache, build(), field, cfg, fingerprint)
    train = np.memmap(cache / "train.bin", dtype=np.uint8, mode="r")
    val = np.memmap(cache / "val.bin", dtype=np.uint8, mode="r")
    return Corpus(train=train, val=val, fingerprint=fingerprint)


def _build_cache(cache: Path, ds, field: str, cfg, fingerprint: dict) -> None:
    """Tokenize into a temporary folder and rename it into place, so a crash leaves no half cache."""
    separator = cfg.doc_separator.encode()
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=cache.parent, prefix=f".{cache.name}."))
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
    (tmp / "fingerprint.json").write_text(json.dumps({**fingerprint, "train_bytes": n_train, "val_bytes": n_val}, indent=1))
    try:
        os.rename(tmp, cache)
    except OSError:  # another process built the same cache first; theirs is identical
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


def corpus_stats(corpus: Corpus) -> dict:
    return {**corpus.fingerprint, "train_tokens": int(len(corpus.train)), "val_tokens": int(len(corpus.val))}


# -- batching -----------------------------------------------------------------------------------


def sample_batch(tokens: np.ndarray, batch_size: int, length: int, seed: int, step: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of ``length + 1`` tokens -> (inputs, targets), each [batch_size, length].

    The windows depend only on (seed, step), so a resumed run sees exactly the batches it would
    have seen, with no data-loader state to save.
    """
    if len(tokens) < length + 2:
        raise PosbenchError(f"training split has {len(tokens)} tokens, too few for windows of {length + 1}")
    rng = np.random.default_rng([seed, step])
    starts = rng.integers(0, len(tokens) - length - 1, size=batch_size)
    windows = torch.from_numpy(tokens[starts[:, None] + np.arange(length + 1)].astype(np.int64))
    return windows[:, :-1], windows[:, 1:]
