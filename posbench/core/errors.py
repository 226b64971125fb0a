"""One exception type for bad user input, and how entry points turn it into one line and exit 2."""

from __future__ import annotations

import contextlib
import signal
import sys

INTERRUPTED = "posbench: interrupted; run the same command again to resume (unfinished runs continue from their " \
              "last resume state)"
_interrupted = 0  # set by the handlers below: the signal (SIGINT, SIGTERM) that interrupted this process


class PosbenchError(Exception):
    """A user-facing error: the message names the bad value and what would be valid."""


class Interrupted(KeyboardInterrupt):
    """A SIGINT or SIGTERM that stopped the command, with the line that says where it stopped and how to go
    on (posbench/core/interrupts.py makes the ones of training). A KeyboardInterrupt, so that whatever lets a
    Ctrl-C through (a sweep, a run's failure record) lets it through too; the exit status is 128 + the
    signal's number, the shell's convention (130 for SIGINT, 143 for SIGTERM, which SLURM and timeout send)."""

    def __init__(self, signum: int, line: str = INTERRUPTED):
        super().__init__(line)
        self.signum, self.line = signum, line

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


def _on_sigint(signum, frame):
    global _interrupted
    _interrupted = signum
    raise KeyboardInterrupt


def _on_sigterm(signum, frame):
    global _interrupted
    _interrupted = signum
    raise Interrupted(signum)


def note_interrupts() -> None:
    """Remember a Ctrl-C as well as raising KeyboardInterrupt (Python's own handler does only that). A
    KeyboardInterrupt that lands inside a third-party import can be swallowed there and leave the module
    half-made, so that the error which follows is another one (a RecursionError in numpy's lazy
    attributes, seen in a Ctrl-C 0.4 s after start): remembered, it is still reported as the interrupt.
    A process that started with SIGINT ignored, or under another handler, keeps it. SIGTERM (SLURM's
    and timeout's) is the same interrupt: without a handler it killed the process with no word (exit 143);
    with one it is a line and 143, and every state file it leaves is whole (posbench/core/files.py)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def raise_if_interrupted() -> None:
    """Raise the KeyboardInterrupt of a Ctrl-C that a third-party import swallowed whole (no error
    followed it; seen under load: a Ctrl-C 0.4 s after start, and the run then trained to the end)."""
    if _interrupted:
        raise KeyboardInterrupt


@contextlib.contextmanager
def user_errors():
    """PosbenchError -> ``posbench: error: <message>`` and exit 2; Ctrl-C -> one line and 130 (also when
    the interrupt surfaced as another error: see ``note_interrupts``); an ``Interrupted`` -> its own line
    (training's names the step it resumes from) and 128 + its signal."""
    try:
        yield
    except PosbenchError as e:
        print(f"posbench: error: {e}", file=sys.stderr)
        sys.exit(2)
    except Interrupted as e:
        print(e.line, file=sys.stderr)
        sys.exit(e.exit_status)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        sys.exit(130)
    except Exception:
        if not _interrupted:
            raise
        print(INTERRUPTED, file=sys.stderr)
        sys.exit(128 + _interrupted)
