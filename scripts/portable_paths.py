"""Rewrite the absolute paths of the machines that made the committed results into portable ones, in
every file under results/ (and every text file inside a records file, posbench/store/records.py):

    python scripts/portable_paths.py [results]        # rewrites in place; prints what it changed
    python scripts/portable_paths.py --check          # lists what would change; exit 1 if anything would

The studies ran on machines whose folders mean nothing elsewhere (a CPU machine's /work/runs, a GPU
machine's /tmp/mg_runs). Reports made since write them portable themselves (posbench/core/paths.py);
this converts the earlier ones, by the rules below, the same for every file:

    /work/X                 -> ../X            the folder holding the checkouts (the study's git worktree
                                               and its runs folder beside it), seen from a checkout
    /tmp/X                  -> $TMPDIR/X       a temporary folder on that machine
    /root/out               -> $OUT            the GPU machine's output folder (its command's $OUT)
    .../site-packages/X     -> site-packages/X an installed package's file (in a warning's text)

A run's id is made from its config with the path as it was on its machine; a rewritten config reads
``$TMPDIR/...`` where the id read ``/tmp/...`` (tests/store/test_identity.py undoes that rule to check
the ids). ``tests/project/test_results_paths.py`` fails on any absolute path left under results/.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path

from posbench.store.records import SUFFIX, read_records, write_records

EDGE = r"(?<![\w.~$/-])"  # a path's start: not inside a word, a relative path or a URL
RULES = [
    (re.compile(EDGE + r"/work(?=/)"), ".."),
    (re.compile(EDGE + r"/tmp(?=/)"), "$TMPDIR"),
    (re.compile(EDGE + r"/root/out\b"), "$OUT"),
    (re.compile(EDGE + r"/[^\s\"'`]*?/site-packages/"), "site-packages/"),
]


def rewritten(text: str) -> str:
    for pattern, to in RULES:
        text = pattern.sub(to, text)
    return text


def text_of(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None  # a figure, an npz: no paths in them


def convert(path: Path, write: bool) -> int:
    """The number of files (a records file's members counted one by one) that change."""
    if path.suffix == SUFFIX:
        files, changed = read_records(path), 0
        for named in files.values():
            for name, data in named.items():
                text = text_of(data)
                if text is not None and (new := rewritten(text)) != text:
                    named[name], changed = new.encode(), changed + 1
        if changed and write:
            write_records(files, path)
        return changed
    packed = path.suffix == ".gz"  # a report's manifest and evaluations.csv.gz: the text inside
    text = text_of(gzip.decompress(path.read_bytes()) if packed else path.read_bytes())
    if text is None or (new := rewritten(text)) == text:
        return 0
    if write:
        path.write_bytes(gzip.compress(new.encode(), mtime=0) if packed else new.encode())
    return 1


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, nargs="?", default=Path("results"))
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 where a file would change")
    args = ap.parse_args(argv)
    total = 0
    for path in sorted(p for p in args.folder.rglob("*") if p.is_file()):
        if n := convert(path, write=not args.check):
            print(f"{path}: {n} file{'s' if n > 1 else ''}")
            total += n
    print(f"portable_paths: {total} files {'would change' if args.check else 'rewritten'}")
    sys.exit(1 if args.check and total else 0)


if __name__ == "__main__":
    main()
