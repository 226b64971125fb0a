"""The console scripts' entry functions (pyproject's [project.scripts]): each imports its command
only once it is running inside posbench's error handling, so a Ctrl-C while torch and Hydra load
(the first second or two) is one line and exit 130 like a Ctrl-C at any later moment, never a
KeyboardInterrupt traceback. Only the standard library and posbench.core.errors load before that."""

from __future__ import annotations

import os
import select
import sys
from importlib import import_module

from posbench.core.errors import note_interrupts, raise_if_interrupted, user_errors


SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader went away


def _run(module: str) -> None:
    note_interrupts()
    try:
        with user_errors():
            command = import_module(module).main
            raise_if_interrupted()  # a Ctrl-C swallowed inside an import still stops before any work
            try:
                command()
            finally:  # also after sys.exit (--version): a last line still buffered meets a gone reader
                if sys.stdout is not None:  # here, not in Python's own flush at exit
                    sys.stdout.flush()
    except BrokenPipeError:
        if not _stdout_gone():
            raise  # a pipe of the command's own (a subprocess, a socket): a fault to see, not a reader gone
        # the reader of the output went away (`| head`, a study script stopped while a command printed):
        # no traceback; what the command had written (files are written whole) stays. stdout goes to
        # devnull so that Python's own flush at exit does not raise again (Python's signal docs' recipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(SIGPIPE_EXIT)


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports an error on its write end)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no stdout, or no poll on this platform
        return False


def train() -> None:
    _run("posbench.cli.train")


def evaluate() -> None:
    _run("posbench.cli.evaluate")


def report() -> None:
    _run("posbench.cli.report")


def records() -> None:
    _run("posbench.cli.records")


def eval_hf() -> None:
    _run("posbench.cli.eval_hf")


def export() -> None:
    _run("posbench.cli.export")
