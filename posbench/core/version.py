"""``--version`` of every command (posbench-train, posbench-eval, posbench-report): one line that
starts ``posbench <version>``, with torch's, Python's and the device a bug report needs beside it."""

from __future__ import annotations

import platform

from posbench import __version__
from posbench.core.device import describe, resolve_device


def version_text() -> str:
    """posbench's version, with torch's, Python's and the device ``device=auto`` would use."""
    import torch

    return (f"posbench {__version__} (torch {torch.__version__}, Python {platform.python_version()}; "
            f"device: {describe(resolve_device('auto'))})")
