"""A lock file held with flock: one process at a time works on a run or a trunk (``hold``), and a
refused command says which process holds it (``holder``). Which file is a folder's lock is
posbench/store/rundir.py's (``RunDir.lock``)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path
from typing import Iterator

from posbench.core.files import make_dirs

log = logging.getLogger("posbench")


@contextlib.contextmanager
def hold(path: Path, wait: bool = False) -> Iterator[bool]:
    """Hold the lock file ``path`` (its folder created if missing) while working on its folder; yields
    False (holding nothing) when another process has it, so that two terminals or a requeued cluster
    job never train the same run twice. With ``wait``, wait for the other process instead (saying
    so), and yield True once the lock is ours: posbench-eval does, so that two evaluations of one run
    add their records one after the other."""
    make_dirs(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                yield False
                return
            log.info("waiting for the process (pid %s) working on %s to finish", holder(path), path.parent)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def holder(path: Path) -> str:
    """The pid the lock file ``path`` names ("?" when it names none)."""
    try:
        return path.read_text().strip() or "?"
    except OSError:
        return "?"


def is_free(path: Path) -> bool:
    """Whether no process holds the lock file ``path`` now, tested without taking it for longer than
    the test (and without creating a lock file where there is none)."""
    if not path.exists():
        return True
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)
