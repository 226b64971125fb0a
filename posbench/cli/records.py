"""A study's run directories as one compact records file, and back: ``posbench-records keep | unpack | list``
(posbench/store/records.py says what a records file holds and why)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from posbench.core.errors import PosbenchError, user_errors
from posbench.core.version import version_text
from posbench.store import records


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad flag reported like every other user error: one line, exit 2."""

    def error(self, message: str):
        print(f"posbench: error: {message} (posbench-records --help lists the commands)", file=sys.stderr)
        sys.exit(2)


def ignored(path: Path) -> bool:
    """Whether git would leave ``path`` out of a commit (False outside a git work tree): records are kept
    to be committed, and the repository ignores every folder named runs/."""
    path = Path(path).absolute()
    where = next((p for p in path.parents if p.exists()), None)
    done = subprocess.run(["git", "check-ignore", "-q", str(path)], capture_output=True, cwd=where)
    return done.returncode == 0


def main(argv: list[str] | None = None) -> None:
    if "--version" in (sys.argv[1:] if argv is None else argv):  # like the other commands', before a command is asked for
        print(version_text())
        sys.exit(0)
    parser = _Parser(prog="posbench-records", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="{keep,unpack,list}")
    keep = commands.add_parser("keep", help="add RUNS_DIR's ended runs (less weights and resume state) to RECORDS")
    keep.add_argument("runs_dir", type=Path, metavar="RUNS_DIR")
    keep.add_argument("records", type=Path, metavar="RECORDS", help=f"a {records.SUFFIX} file (created if absent)")
    unpack = commands.add_parser("unpack", help="write RECORDS' run directories under DEST (a run DEST has is left)")
    unpack.add_argument("records", type=Path, metavar="RECORDS")
    unpack.add_argument("dest", type=Path, metavar="DEST")
    show = commands.add_parser("list", help="one line per folder of RECORDS: its status and files")
    show.add_argument("records", type=Path, metavar="RECORDS")
    args = parser.parse_args(argv)
    with user_errors():
        if args.command == "keep":
            if not args.runs_dir.is_dir():
                raise PosbenchError(f"{str(args.runs_dir)!r} is not a folder; give a runs_dir of posbench-train")
            if args.records.suffix != records.SUFFIX:
                raise PosbenchError(f"records file {str(args.records)!r} must end in {records.SUFFIX}")
            if ignored(args.records):
                raise PosbenchError(f"git ignores {str(args.records)!r} (.gitignore), so the records could not be "
                                    "committed; give another place (e.g. not under a folder named runs/)")
            kept = records.keep(args.runs_dir, args.records)
            print(f"posbench-records: {kept.copied} runs added or updated in {args.records}; "
                  f"{kept.left} unfinished or in use left"
                  + ("; its runs' per-position curves rewritten in float16" if kept.compacted else ""))
        elif args.command == "unpack":
            written, left = records.unpack(args.records, args.dest)
            print(f"posbench-records: {written} folders written under {args.dest}; {left} already there, left as they were")
        else:
            print("\n".join(records.listing(args.records)))


if __name__ == "__main__":
    main(sys.argv[1:])
