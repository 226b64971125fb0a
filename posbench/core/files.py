"""Files written so that a reader never sees half of one: atomic writes (a temporary file renamed into
place), folders published whole (``publish_dir``), JSON without NaN, and the process's umask
respected."""

from __future__ import annotations

import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from posbench.core.errors import PosbenchError


def check_writable_dir(path: str, what: str) -> None:
    """A folder we can create or write into (checked before anything runs, so nothing is half done)."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise PosbenchError(f"{what}={path} is a file, not a folder; give a folder to write runs into")
    probe = p
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise PosbenchError(f"{what}={path} cannot be created: {probe} is a file")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise PosbenchError(f"{what}={path} is not writable ({probe} is read-only); give a folder you can write to")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _umask()


def make_dirs(path: Path) -> None:
    """mkdir -p with the umask's permissions (what mkdir does; named so every folder goes one way)."""
    Path(path).mkdir(parents=True, exist_ok=True)


def private_tempdir(parent: Path, prefix: str) -> Path:
    """A temporary folder in ``parent`` with the umask's permissions (mkdtemp makes it 0700)."""
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=prefix))
    os.chmod(tmp, 0o777 & ~UMASK)
    return tmp


def publish_dir(tmp: Path, final: Path) -> None:
    """Rename a folder built in ``tmp`` into place as ``final`` (a cache keyed by what it holds). Where
    another process published the same folder first, theirs is identical: keep it (the caller removes
    ``tmp``)."""
    try:
        os.rename(tmp, final)
    except OSError:
        pass


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    make_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~UMASK)  # mkstemp makes it 0600
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_torch_save(path: Path, obj: Any) -> None:
    """torch.save, atomically: serialised in memory, then written and renamed into place."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue())


def _json_safe(x: Any) -> Any:
    """NaN and inf are not JSON; they become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(_json_safe(obj), indent=1, allow_nan=False) + "\n")
