"""How entry points turn bad input into one line on stderr and a non-zero exit."""

from __future__ import annotations

import contextlib
import sys

from posbench.errors import PosbenchError


@contextlib.contextmanager
def user_errors():
    """PosbenchError -> ``posbench: error: <message>`` and exit 2, no traceback."""
    try:
        yield
    except PosbenchError as e:
        print(f"posbench: error: {e}", file=sys.stderr)
        sys.exit(2)
