"""The report pipeline: run directories in, tables, figures and report.md / report.html out.

Reads every ``metrics.json`` below a runs folder (the report never trains or evaluates); runs that
cannot be read are skipped with a warning and listed in the report. Beside report.md it writes
``manifest.json.gz``: what a rebuild of the report reads besides its records (posbench/report/records/manifest.py). The report is its sections
(posbench/report/section.py), in their order: each that applies writes its files and gives its
blocks; the "Files" list is made from what they declared, and files an earlier report wrote for a
section that no longer applies are removed.
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.core.files import atomic_write_text
from posbench.core.registry import plugin_code
from posbench.report.analysis import task_frames
from posbench.report.analysis import convergence
from posbench.report.context import Options, ReportContext
from posbench.report.drawing.document import Heading, Image, Para, Table, render
from posbench.report.drawing.png import keep_figure
from posbench.report.comparison.frames import check_pairs
from posbench.report.forecast.section import check_requests
from posbench.report.records.manifest import manifest_of, write_manifest
from posbench.report.analysis.prose import join_words
from posbench.report.section import SECTIONS, Section, SectionOutput, write_or_fail

log = logging.getLogger("posbench")
DEFAULT_TOLERANCE = 0.05
REPORT = "report.md"


@dataclass(frozen=True)
class Report:
    """A written report: its markdown (report.html beside it) and every file its sections wrote,
    name -> one-line description."""

    path: Path
    files: dict[str, str]

    @property
    def figures(self) -> dict[str, str]:
        return {name: what for name, what in self.files.items() if name.endswith(".png")}


def sections() -> list[Section]:
    """Every report section, built in or installed, in report order. An installed one that does
    not load is left out with a warning: someone else's broken package must not stop a report."""
    found = []
    for name in SECTIONS.names():
        try:
            cls = SECTIONS.get(name)
            with plugin_code("report section", name, cls.__module__, "being built"):
                found.append(cls())
        except PosbenchError as e:
            log.warning("leaving out report section %r: %s", name, e)
    return sorted(found, key=lambda s: (s.order, s.name))


def run_section(section: Section, ctx: ReportContext, out_dir: Path, written: dict[str, str]) -> list | None:
    """A section's blocks, or None when it does not apply. An installed section that raises is
    left out with one warning naming it and its error, and the files it wrote so far are not kept
    (the rest of the report is written: someone else's section must not cost the user the report);
    a built-in section that raises is posbench's bug and stops the report with its traceback."""
    before = set(written)
    try:
        with plugin_code("report section", section.name, type(section).__module__, "building its part of the report"):
            return section.build(ctx, SectionOutput(out_dir, section, written, ctx.options.vector)) if section.applies(ctx) else None
    except PosbenchError as e:
        if SECTIONS.is_builtin(section.name):
            raise  # e.g. a folder that cannot be written: the report's own one-line error
        for name in set(written) - before:
            del written[name]  # not listed; remove_stale deletes the partial file
        log.warning("leaving out report section %r: %s", section.name, e)
        return None


def carried_blocks(section: Section, source: Path, out_dir: Path, written: dict[str, str]) -> list | None:
    """A section drawn from what the records do not keep, in a report rebuilt from them: the committed
    report's files (in ``source``, copied into ``out_dir`` when the report is written elsewhere), kept
    as they are and said to be (figures shown, tables named); None where it had none."""
    kept = sorted(p.name for p in source.iterdir() if p.is_file() and any(f.matches(p.name) for f in section.files))
    if not kept:
        return None
    for name in kept:
        if name.endswith(".png"):
            write_or_fail(out_dir, lambda name=name: keep_figure(source / name, out_dir / name))
        elif source.resolve() != out_dir.resolve():
            write_or_fail(out_dir, lambda name=name: shutil.copyfile(source / name, out_dir / name))
    for name in kept:
        declared = next(f for f in section.files if f.matches(name))
        written[name] = f"{declared.description} (the committed report's {'figure' if name.endswith('.png') else 'file'}, not redrawn)"
    tables = [f"`{name}`" for name in kept if not name.endswith(".png")]
    return [Heading(section.title or section.name),
            Para((section.caption + " " if section.caption else "") + "Made by the committed report from what its "
                 "records do not keep (the runs' own files, or runs it did not compare): kept as it was, in that "
                 "report's style" + (f" ({join_words(tables)})" if tables else "") + "."),
            *[Image(name, written[name]) for name in kept if name.endswith(".png")]]


def check_options(options: Options) -> None:
    """Each flag's value, in one line naming it (before anything is read or written)."""
    if not 0 <= options.tolerance < 10:
        raise PosbenchError(f"--tolerance must be a fraction such as 0.05, got {options.tolerance}")
    for name, value in (("--improving", options.improving), ("--spread", options.spread)):
        if not 0 <= value < 10:
            raise PosbenchError(f"{name} must be a fraction such as 0.02, got {value}")
    if options.multiple is not None and not (math.isfinite(options.multiple) and options.multiple > 0):
        raise PosbenchError(f"--multiple must be a positive multiple of train_len such as 16, got {options.multiple:g}")
    options.selection.conditions()  # a --where that is not key=value says so here
    if not (0 <= options.threshold <= 1 and math.isfinite(options.threshold)):
        raise PosbenchError(f"--threshold is an accuracy between 0 and 1 (a fraction such as 0.8), got {options.threshold}")


def check_out_dir(out_dir: Path) -> None:
    """The report folder: created if missing, and writable (one line otherwise, nothing written)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PosbenchError(f"cannot create the report folder {str(out_dir)!r}: {e.strerror or e}") from None
    write_or_fail(out_dir, lambda: tempfile.TemporaryFile(dir=out_dir).close())  # a read-only folder says so here


def make_report(runs_dir: Path | list[Path], out_dir: Path, options: Options) -> Report:
    """Every check that can refuse the report comes before the first file is written: the flags,
    the runs (ReportContext.load: one folder or several, joined) and the report folder."""
    dirs = [Path(runs_dir)] if isinstance(runs_dir, (str, Path)) else [Path(d) for d in runs_dir]
    out_dir = Path(out_dir)
    for d in dirs:
        if not d.is_dir():
            raise PosbenchError(f"runs directory {str(d)!r} does not exist")
    check_options(options)
    if out_dir.exists() and not out_dir.is_dir():
        raise PosbenchError(f"--out {str(out_dir)!r} is a file; give a folder for the report")
    ctx = ReportContext.load(dirs, options, out_dir)
    if options.comparison and not ctx.evals.empty:
        # rows of other tokens, another budget or no shared seed: one line, before anything is written
        check_pairs(ctx.evals, options.comparison)
    check_requests(ctx)  # a forecast asked for where the runs cannot give one
    check_out_dir(out_dir)
    written: dict[str, str] = {}
    blocks, ran, every = [], [], sections()
    for section in every:
        carried = ctx.recorded is not None and section.needs_runs
        built = (carried_blocks(section, ctx.recorded.folder, out_dir, written) if carried
                 else run_section(section, ctx, out_dir, written))
        if built is not None:
            blocks += built
            ran.append(section)
    blocks += files_blocks(ran, written)
    # before the pages are drawn: a figure links its PDF where one lies beside it, never an older report's
    remove_stale(out_dir, every, written)
    md, page = render(blocks, out_dir, "posbench report")
    report, manifest = out_dir / REPORT, manifest_of(ctx)  # what a rebuild reads (report/records/manifest.py)
    write_or_fail(out_dir, lambda: (write_manifest(out_dir, manifest),
                                    atomic_write_text(out_dir / "report.html", page), atomic_write_text(report, md)))
    return Report(report, written)


def build_report(runs_dir: Path, out_dir: Path, tolerance: float = DEFAULT_TOLERANCE, protocols: list[str] | None = None,
                 improving: float = convergence.DEFAULT_IMPROVING, spread: float = convergence.DEFAULT_SPREAD,
                 threshold: float = task_frames.DEFAULT_THRESHOLD) -> Path:
    """The report of the runs below ``runs_dir``, written into ``out_dir``; returns report.md."""
    return make_report(runs_dir, out_dir, Options(tolerance, improving, spread, threshold, protocols)).path


def files_blocks(ran: list[Section], written: dict[str, str]) -> list:
    """The "Files" list: what the sections that ran wrote, in the order they declared it."""
    rows = {name: written[name] for s in ran for f in s.files for name in sorted(written) if f.matches(name)}
    if not rows:
        return []
    return [Heading("Files"),
            Para(f"Beside this report (`{REPORT}`; `report.html` is the same report with every figure embedded):"),
            Table(pd.DataFrame(list(rows.items()), columns=["file", "contents"]))]


def remove_stale(out_dir: Path, every: list[Section], written: dict[str, str]) -> None:
    """Remove what an earlier report wrote for a section that no longer applies (or for an item it
    no longer has, such as a task): a figure must not outlive its data."""
    declared = [f for s in every for f in s.files]
    for path in out_dir.iterdir():
        replaced = f"{path.name}.gz" in written  # evaluations.csv of a report made before it was compressed
        if path.name not in written and path.is_file() and (replaced or any(f.matches(path.name) for f in declared)):
            try:
                path.unlink()
            except OSError as e:
                log.warning("cannot remove %s, left from an earlier report: %s", path, e.strerror or e)
