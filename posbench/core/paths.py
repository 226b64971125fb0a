"""This machine's absolute paths made portable in what posbench writes for others to read (a report's
commands and recorded configs): a reader's machine has other folders, and a committed report that names
``/home/alice/...`` says nothing useful and leaks who made it.

``portable`` rewrites a path below the current directory relative to it, one below its parent as
``../...`` (a runs folder beside the checkout), a path below the home folder as ``~/...`` and one below
the temporary folder as ``$TMPDIR/...``; any other absolute path is left as it
is (it may be what a reader needs to know, e.g. a shared dataset mount), and the repository's test over
``results/`` (tests/project/test_results_paths.py) fails on it so that it is seen before a commit.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path


def portable(text: str, cwd: Path | None = None, home: Path | None = None, tmp: Path | None = None) -> str:
    """``text`` with each absolute path under ``cwd`` (default: the current directory), ``home`` and
    ``tmp`` rewritten (the longest prefix first: a checkout in the home folder reads as relative; the
    root folder is never a prefix)."""
    cwd = Path(cwd or os.getcwd())
    roots = [(cwd, ""), (cwd.parent, "../"), (Path(tmp or tempfile.gettempdir()), "$TMPDIR/"),
             (Path(home or Path.home()), "~/")]
    roots = sorted(((str(p).rstrip("/"), to) for p, to in roots if str(p) not in ("", "/")), key=lambda r: -len(r[0]))
    for root, to in roots:
        # the root itself (a whole token: not /tmpfoo), or a path below it
        text = re.sub(rf"(?<![\w.~$-]){re.escape(root)}(/|(?=[\s\"',;:)\]}}]|$))",
                      lambda m, to=to: to if m.group(1) else (to.rstrip("/") or "."), text)
    return text
