"""A writable folder for matplotlib's config and font cache, chosen before matplotlib is imported.

Where HOME (or XDG_CONFIG_HOME / XDG_CACHE_HOME) cannot be written (a read-only home on a cluster
node, a container without one), matplotlib falls back to a temporary folder by itself, but prints
two warnings about it on every report. Pointing MPLCONFIGDIR at a temporary folder first is the
same fallback without the noise. A folder the user chose (MPLCONFIGDIR set) is left alone.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path


def _default_dirs() -> list[Path]:
    """Where matplotlib would keep its config and cache (matplotlib._get_config_or_cache_dir)."""
    home = Path.home()
    if sys.platform.startswith(("linux", "freebsd")):
        return [Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "matplotlib",
                Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "matplotlib"]
    return [home / ".matplotlib"]


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)  # what matplotlib would do first
    except OSError:
        return False
    return folder.is_dir() and os.access(folder, os.W_OK)


def use_writable_config_dir() -> None:
    """Set MPLCONFIGDIR to a temporary folder (removed at exit) when matplotlib's default folders
    cannot be written; nothing when they can, when MPLCONFIGDIR is set, or once matplotlib is
    imported (too late to matter)."""
    if os.environ.get("MPLCONFIGDIR") or "matplotlib" in sys.modules:
        return
    try:
        if all(_writable(d) for d in _default_dirs()):
            return
    except RuntimeError:  # Path.home(): no HOME and no password entry
        pass
    folder = tempfile.mkdtemp(prefix="posbench-matplotlib-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["MPLCONFIGDIR"] = folder
