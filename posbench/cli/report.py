"""Tables, plots and a readable report from run directories: ``posbench-report RUNS_DIR [RUNS_DIR ...] [--out DIR]``.

The command line of the report (posbench/report/: it reads every ``metrics.json`` below each RUNS_DIR,
joined, and never trains or evaluates). A RUNS_DIR may be a study's records file (``posbench-records``):
its run directories are read from a temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Iterator

from posbench.core.errors import PosbenchError, user_errors
from posbench.core.tracking import log_report
from posbench.core.version import version_text
from posbench.report.analysis import convergence, task_frames
from posbench.report.context import Options
from posbench.report.forecast.section import parse_requests
from posbench.report.key_tokens.frames import RULES
from posbench.report.pipeline import DEFAULT_TOLERANCE, make_report
from posbench.report.records.selection import ComparisonRequest, Selection, shown_folder
from posbench.store import records


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad flag reported like every other user error: one line, exit 2."""

    def error(self, message: str):
        print(f"posbench: error: {message} (posbench-report --help lists the flags)", file=sys.stderr)
        sys.exit(2)


@contextlib.contextmanager
def runs_folders(given: list[Path], out: Path | None, rebuild: bool) -> Iterator[list[Path]]:
    """The folders to read: each RUNS_DIR as given, a records file (``posbench-records``) as its run
    directories unpacked into a temporary folder for as long as the report is made."""
    packed = [p for p in given if p.suffix == records.SUFFIX]
    if not packed:
        yield list(given)
        return
    if rebuild:
        raise PosbenchError(f"--rebuild reads a committed report's folder, not a records file ({str(packed[0])!r}); "
                            "give the report's folder")
    if out is None:
        raise PosbenchError(f"a records file ({str(packed[0])!r}) has no folder to write the report into; give --out")
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(records.as_folder(p)) for p in given]


def main(argv: list[str] | None = None) -> None:
    if "--version" in (sys.argv[1:] if argv is None else argv):  # like posbench-train's: before RUNS_DIR is asked for
        print(version_text())
        sys.exit(0)
    parser = _Parser(prog="posbench-report", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="store_true", help="posbench's version, torch's, Python's and the device")
    parser.add_argument("runs_dirs", type=Path, nargs="+", metavar="RUNS_DIR",
                        help="folders with run directories (searched recursively; several are joined), or a study's "
                             "records file (.parquet, posbench-records; with --out)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: the first RUNS_DIR/report)")
    parser.add_argument("--only", default=None, metavar="GLOB",
                        help="report only the runs whose run id matches this glob, e.g. 'rope_*'")
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                        help="report only the runs whose resolved config has KEY equal to VALUE, e.g. train.steps=200 "
                             "(repeatable: every key must hold; a key repeated holds where any of its values does)")
    parser.add_argument("--multiple", type=float, default=None, metavar="N",
                        help="read the verdicts, the N x/1x ratio and the rank over lengths at this multiple "
                             "(default: the longest multiple every compared row was evaluated at)")
    parser.add_argument("--compare", default=None, metavar="A,B,...",
                        help="add a comparison figure: rows B, ... against row A as paired differences of log-perplexity "
                             "at every length with 95%% intervals (comparison.png, comparison.csv); with --baseline, "
                             "every named row against the baseline")
    parser.add_argument("--baseline", default=None, metavar="ROW",
                        help="add a comparison figure of every row (or the --compare rows) against ROW, e.g. rope")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help="extrapolation length: perplexity within this fraction of 1x (default 0.05)")
    parser.add_argument("--improving", type=float, default=convergence.DEFAULT_IMPROVING,
                        help="flag runs whose 1x validation loss fell by more than this fraction over their last "
                             "doubling of steps (default 0.02)")
    parser.add_argument("--spread", type=float, default=convergence.DEFAULT_SPREAD,
                        help="warn when compared encodings' 1x perplexities differ by more than this fraction (default 0.1)")
    parser.add_argument("--threshold", type=float, default=task_frames.DEFAULT_THRESHOLD,
                        help="tasks: effective context length keeps accuracy at or above this fraction, 0 to 1 (default 0.8)")
    parser.add_argument("--protocols", default=None,
                        help="comma-separated evaluation protocols to report (default: every one found)")
    parser.add_argument("--key-tokens", dest="key_tokens", choices=sorted(RULES), default="bytes",
                        help="the key-token thresholds: 'bytes' (Fang et al.'s alpha = 2, beta = -2 nats per Llama-3 "
                             "token scaled to nats per byte, the default) or 'paper' (their numbers on the stored tokens)")
    parser.add_argument("--forecast", dest="forecasts", action="append", default=[], metavar="AXIS=VALUE",
                        help="forecast each row's verdict past the data at this value of an axis (train_len, params, "
                             "rope_base or budget_steps; repeatable), where the law's backtest passed (default: one "
                             "doubling past each line's largest point)")
    parser.add_argument("--rebuild", action="store_true",
                        help="RUNS_DIR is a committed report's folder whose runs are gone: rebuild its report from the "
                             "records it kept (evaluations.csv.gz, task_records.csv, convergence.csv, and the configs, "
                             "commands and environment in manifest.json.gz); --out defaults to RUNS_DIR")
    parser.add_argument("--with", dest="with_folders", type=Path, action="append", default=[], metavar="FOLDER",
                        help="with --rebuild: a committed report of some of the same runs retrained later; their records "
                             "replace these on the protocols it scored (repeatable)")
    parser.add_argument("--vector", action="store_true",
                        help="also write every figure drawn as a PDF beside its PNG (vector, for print; linked beside the "
                             "figure in the report); off by default, the committed reports stay small")
    parser.add_argument("--wandb", action="store_true", help="also log the tables and figures to a wandb run (logger settings from WANDB_* variables; offline by default)")
    args = parser.parse_args(argv)
    with user_errors():
        if args.with_folders and not args.rebuild:
            raise PosbenchError("--with joins a committed report's records, so it needs --rebuild")
        first = args.runs_dirs[0]
        out = args.out or (first if args.rebuild else first / "report")
        if args.rebuild and args.protocols and out.resolve() == first.resolve():
            raise PosbenchError("--protocols with --rebuild in place would leave only those protocols' records in "
                                f"{first}; give --out another folder")
        protocols = [p for p in args.protocols.split(",") if p] if args.protocols else None
        compare = ComparisonRequest(tuple(r.strip() for r in (args.compare or "").split(",") if r.strip()),
                                    args.baseline or None)
        # a records file is named by itself (as shown_folder names a folder), not by its temporary unpacking
        shown_as = tuple(shown_folder(p, out or p.parent) if p.suffix == records.SUFFIX else "" for p in args.runs_dirs)
        options = Options(args.tolerance, args.improving, args.spread, args.threshold, protocols, args.rebuild,
                          tuple(args.with_folders), args.multiple, Selection(args.only, tuple(args.where)), compare,
                          args.key_tokens, shown_as, parse_requests(args.forecasts), vector=args.vector)
        with runs_folders(args.runs_dirs, args.out, args.rebuild) as folders:
            report = make_report(folders, out, options)
        if args.wandb:
            log_report(out, report.figures)
    print(f"report written to {report.path} and {report.path.with_suffix('.html')}")


if __name__ == "__main__":
    main(sys.argv[1:])
