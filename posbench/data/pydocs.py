"""Where the English-prose corpus ``data=pydocs`` lives: the Python documentation's reST sources that
Debian's and Ubuntu's ``python3-doc`` package installs, found on disk, or one line saying how to get them.

The package (``python3.11-doc`` on Debian 12, pulled in by ``python3-doc``, ~11 MB of sources) puts
Sphinx's copies of the ``.rst`` files beside the HTML: ``/usr/share/doc/python3.X/html/_sources/**/*.rst.txt``,
about 500 documents of English prose (tutorial, library reference, HOWTOs, FAQ) with reST markup.
A fresh machine gets them from the package registry, with no network beyond it, like the default
corpus (the standard library's source, posbench/data/corpus.py); which version is read is recorded
in the corpus fingerprint, since the text differs across Python versions.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from posbench.core.errors import PosbenchError

DOC_ROOT = Path("/usr/share/doc")
INSTALL = "apt-get install python3-doc"  # Debian/Ubuntu: the distribution's default python3.X-doc
_VERSIONED = re.compile(r"python(\d+)\.(\d+)$")


def sources_of(version: str, base: Path = DOC_ROOT) -> Path:
    """The reST sources of Python ``version`` (``3.11``) as the package installs them."""
    return base / f"python{version}" / "html" / "_sources"


def installed_versions(base: Path = DOC_ROOT) -> list[str]:
    """Versions whose documentation sources are installed under ``base``, oldest first."""
    found = []
    for folder in base.glob("python*"):
        m = _VERSIONED.match(folder.name)
        if m and sources_of(folder.name[len("python"):], base).is_dir():
            found.append((int(m.group(1)), int(m.group(2))))
    return [f"{a}.{b}" for a, b in sorted(found)]


def docs_root(path: str | None, base: Path = DOC_ROOT) -> tuple[Path, str | None]:
    """(folder of the documents, its Python version or None) for ``data.path`` (null: the installed
    package's sources, the running Python's version if installed, else the newest installed)."""
    if path:
        root = Path(path).expanduser()
        if not root.is_dir():
            raise PosbenchError(f"data=pydocs: no documentation sources at {str(root)!r} (data.path); "
                                f"install them with `{INSTALL}` (Debian/Ubuntu) or give a folder of .rst.txt files")
        version = next((f"{m.group(1)}.{m.group(2)}" for part in root.parts if (m := _VERSIONED.match(part))), None)
        return root, version
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    versions = installed_versions(base)
    if not versions:
        raise PosbenchError(f"data=pydocs: no Python documentation sources at {str(sources_of(running, base))!r}; "
                            f"install them with `{INSTALL}` (Debian/Ubuntu; scripts/setup.sh does when root), "
                            "or set data.path to a folder of .rst.txt files")
    version = running if running in versions else versions[-1]
    return sources_of(version, base), version
