"""The run directory's lock: one process at a time trains or evaluates a run (``run_lock``), and a
refused command says which process holds it (``lock_holder``)."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path
from typing import Iterator

from posbench.core.files import make_dirs
from posbench.store.rundir import LOCK

log = logging.getLogger("posbench")


@contextlib.contextmanager
def run_lock(run_dir: Path, wait: bool = False) -> Iterator[bool]:
    """Hold the run's lock while working on it; yields False (holding nothing) when another process
    has it, so that two terminals or a requeued cluster job never train the same run twice. With
    ``wait``, wait for the other process instead (saying so), and yield True once the lock is ours:
    posbench-eval does, so that two evaluations of one run add their records one after the other."""
    make_dirs(run_dir)
    fd = os.open(Path(run_dir) / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                yield False
                return
            log.info("waiting for the process (pid %s) working on %s to finish", lock_holder(run_dir), run_dir)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def lock_holder(run_dir: Path) -> str:
    try:
        return (Path(run_dir) / LOCK).read_text().strip() or "?"
    except OSError:
        return "?"


def lock_is_free(run_dir: Path) -> bool:
    """Whether no process holds the run's lock now, tested without taking it for longer than the test
    (and without creating a lock file where there is none)."""
    path = Path(run_dir) / LOCK
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
