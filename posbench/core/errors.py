"""One exception type for bad user input, and how entry points turn it into one line and exit 2."""

from __future__ import annotations

import contextlib
import sys


class PosbenchError(Exception):
    """A user-facing error: the message names the bad value and what would be valid."""


@contextlib.contextmanager
def user_errors():
    """PosbenchError -> ``posbench: error: <message>`` and exit 2; Ctrl-C -> one line and 130."""
    try:
        yield
    except PosbenchError as e:
        print(f"posbench: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("posbench: interrupted; run the same command again to resume (unfinished runs continue from their "
              "last resume state)", file=sys.stderr)
        sys.exit(130)
