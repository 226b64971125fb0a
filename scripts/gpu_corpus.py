"""The default corpus packed for a GPU machine, so that its runs read the text the CPU studies read.

    python scripts/gpu_corpus.py                       # -> .gpu_data/stdlib-<version>.tar.xz (git ignores it)

The default corpus is the running Python's standard library, so a GPU machine with another Python
reads other text. This packs this Python's standard-library documents (the files the corpus reads,
~5 MB), which scripts/gpu_study.sh unpacks and reads through data.path. The GPU machine's runs
record another hash for them (a corpus fingerprint names the interpreter's version) but read the
same bytes: their corpus.json gives the documents and bytes to compare.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from posbench.data.corpus import list_documents, stdlib_root

OUT = Path(".gpu_data")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    here, root = sys.version.split()[0], stdlib_root()
    documents = list_documents(root, "**/*.py")
    archive = args.out / f"stdlib-{here}.tar.xz"
    args.out.mkdir(parents=True, exist_ok=True)
    listing = args.out / "documents.txt"
    listing.write_text("".join(p.relative_to(root).as_posix() + "\n" for p in documents))
    subprocess.run(["tar", "cJf", str(archive), "-C", str(root), "-T", str(listing.resolve())], check=True)
    listing.unlink()
    print(f"wrote {archive} ({archive.stat().st_size / 2**20:.1f} MB: the {len(documents)} documents of Python {here}'s "
          "standard library)")


if __name__ == "__main__":
    main()
