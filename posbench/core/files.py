"""Files written so that a reader never sees half of one: atomic writes (a temporary file renamed into
place), folders published whole (``publish_dir``), JSON without NaN, and the process's umask
respected."""

from __future__ import annotations

import contextlib
import glob
import io
import json
import math
import os
import shutil
import signal
import tempfile
import threading
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


@contextlib.contextmanager
def building_dir(parent: Path, prefix: str):
    """A temporary folder (private_tempdir) to build a cache in, removed when the block ends, however it
    ends (publish_dir renames it into place first on success): created under signals_held, so that no
    interrupt falls between its creation and the cleanup that removes it."""
    tmp = None
    try:
        with signals_held():
            tmp = private_tempdir(parent, prefix)
        yield tmp
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def publish_dir(tmp: Path, final: Path) -> None:
    """Rename a folder built in ``tmp`` into place as ``final`` (a cache keyed by what it holds). Where
    another process published the same folder first, theirs is identical: keep it (the caller removes
    ``tmp``)."""
    try:
        os.rename(tmp, final)
    except OSError:
        pass


@contextlib.contextmanager
def signals_held():
    """SIGINT and SIGTERM wait until the block ends, then go to the handlers the process had: a Ctrl-C
    never lands between creating a temporary file and renaming it into place (or removing it), where a
    ``try`` cannot reach, so a write is whole or absent and leaves no hidden ``.<name>.*.tmp``. Only the
    main thread runs Python's handlers (and may set them); elsewhere nothing needs holding."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in HELD}
    if any(h is None for h in before.values()):  # a handler set outside Python: it cannot be put back
        yield
        return
    caught: list[int] = []
    for s in HELD:
        signal.signal(s, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        for signum in caught:  # now, as if it had come this instant (a KeyboardInterrupt, a stop request ...)
            signal.raise_signal(signum)


HELD = (signal.SIGINT, signal.SIGTERM)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_orphans(path: Path) -> None:
    """Remove the temporary files of ``path`` that a killed writer left (kill -9 reaches no ``finally``):
    each temporary name carries its writer's process id, and one whose process is gone is an orphan."""
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = tmp.name[len(path.name) + 2:].partition(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """``data`` into ``path`` through a temporary file renamed into place (a whole file or the old one);
    an interrupt waits for the rename (signals_held), an error removes the temporary file, and the next
    write of ``path`` removes one a killed writer left (remove_orphans)."""
    path = Path(path)
    make_dirs(path.parent)
    remove_orphans(path)
    tmp = None
    try:
        with signals_held():
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as f:  # closes the descriptor whatever fails below
                os.fchmod(f.fileno(), 0o666 & ~UMASK)  # mkstemp makes it 0600
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            tmp = None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


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
