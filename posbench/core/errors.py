"""One exception type for bad user input, and how entry points turn it into one line and exit 2."""

from __future__ import annotations

import contextlib
import signal
import sys

INTERRUPTED = "posbench: interrupted; run the same command again to resume (unfinished runs continue from their " \
              "last resume state)"
_interrupted = False  # set by the handler below: a Ctrl-C was pressed in this process


class PosbenchError(Exception):
    """A user-facing error: the message names the bad value and what would be valid."""


def _on_sigint(signum, frame):
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def note_interrupts() -> None:
    """Remember a Ctrl-C as well as raising KeyboardInterrupt (Python's own handler does only that). A
    KeyboardInterrupt that lands inside a third-party import can be swallowed there and leave the module
    half-made, so that the error which follows is another one (a RecursionError in numpy's lazy
    attributes, seen in a Ctrl-C 0.4 s after start): remembered, it is still reported as the interrupt.
    A process that started with SIGINT ignored, or under another handler, keeps it."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


def raise_if_interrupted() -> None:
    """Raise the KeyboardInterrupt of a Ctrl-C that a third-party import swallowed whole (no error
    followed it; seen under load: a Ctrl-C 0.4 s after start, and the run then trained to the end)."""
    if _interrupted:
        raise KeyboardInterrupt


@contextlib.contextmanager
def user_errors():
    """PosbenchError -> ``posbench: error: <message>`` and exit 2; Ctrl-C -> one line and 130 (also when
    the interrupt surfaced as another error: see ``note_interrupts``)."""
    try:
        yield
    except PosbenchError as e:
        print(f"posbench: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        sys.exit(130)
    except Exception:
        if not _interrupted:
            raise
        print(INTERRUPTED, file=sys.stderr)
        sys.exit(130)
