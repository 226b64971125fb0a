"""A report section: one module that says when it applies, what it writes and what it shows.

A section declares its files (``files``: each name with a one-line description), and the report
builds everything that follows from that declaration: the "Files" list at the end of the report
(from the sections that ran), and the removal of files an earlier report wrote whose section no
longer applies (a figure must not outlive its data). ``build`` receives the ReportContext, where
every run was read once, and a ``SectionOutput`` that writes only the files the section declared.

Built-in sections are the modules of posbench/report/sections/ (a section that is a topic of its
own) and the ``section.py`` of each topic package of posbench/report/ (posbench/report/budget/section.py:
a topic with frames, a figure and words of its own is one folder), registered with
``@SECTIONS.register("name")``; another package adds one through the entry-point group
``posbench.report_sections`` (posbench/core/registry.py)::

    [project.entry-points."posbench.report_sections"]
    my_section = "mypkg.report:MySection"

``order`` places a section among the others (the built-ins' orders are 0 to 140, ten apart).
"""

from __future__ import annotations

import fnmatch
import gzip
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.core.files import atomic_write_bytes, atomic_write_text
from posbench.core.registry import Registry, subclass_check
from posbench.report.drawing.png import VECTOR_SUFFIX, vector_path

if TYPE_CHECKING:
    from posbench.report.context import ReportContext


@dataclass(frozen=True)
class Output:
    """A file a section writes beside the report. ``<...>`` in the name stands for a part the
    section fills in per item (``task_<task>.png``: one figure per task)."""

    name: str
    description: str

    @property
    def pattern(self) -> str:
        return re.sub(r"<[^>]*>", "*", self.name)

    def matches(self, name: str) -> bool:
        """``name`` is this file, or a figure's vector copy (``x.pdf`` beside ``x.png``: posbench-report
        --vector), which is listed, kept and removed with it."""
        if self.is_figure and name.endswith(VECTOR_SUFFIX):
            name = name[: -len(VECTOR_SUFFIX)] + ".png"
        return fnmatch.fnmatchcase(name, self.pattern)

    @property
    def is_figure(self) -> bool:
        return self.name.endswith(".png")


class Section:
    """Base of every report section (see the module doc)."""

    name: ClassVar[str]  # set by the registry
    order: ClassVar[float] = 100.0
    files: ClassVar[tuple[Output, ...]] = ()
    # drawn from what a committed report's records do not keep (a run's history.json or
    # per_position.npz, the records of a learning-rate grid's other settings): in a report rebuilt
    # from those records the section keeps the committed report's files under ``title`` with
    # ``caption`` and says so (pipeline.carried_blocks)
    needs_runs: ClassVar[bool] = False
    title: ClassVar[str] = ""
    caption: ClassVar[str] = ""

    def applies(self, ctx: ReportContext) -> bool:
        """Whether the runs of this report have what the section shows."""
        return True

    def build(self, ctx: ReportContext, out: SectionOutput) -> list:
        """The section's blocks (posbench/report/drawing/document.py), after writing its files with ``out``."""
        raise NotImplementedError


SECTIONS: Registry[type[Section]] = Registry("report section", "posbench.report_sections", "posbench.report.sections",
                                              subclass_check(Section), topic_module="section")


class SectionOutput:
    """Writes one section's files into the report folder; records what was written (name ->
    description) so that the report lists it and keeps it. A name the section did not declare is
    a programming error; a folder that cannot be written is the user's, in one line."""

    def __init__(self, folder: Path, section: Section, written: dict[str, str], vector: bool = False):
        self.folder, self.section, self.written = folder, section, written
        self.vector = vector  # figures also as PDF (posbench-report --vector)

    def _claim(self, name: str, description: str | None) -> Path:
        declared = next((f for f in self.section.files if f.matches(name)), None)
        if declared is None:
            raise RuntimeError(f"report section {self.section.name!r} writes {name!r}, which it does not declare in files")
        self.written[name] = description or declared.description
        return self.folder / name

    def text(self, name: str, text: str) -> None:
        path = self._claim(name, None)
        write_or_fail(self.folder, lambda: atomic_write_text(path, text))

    def csv(self, name: str, frame: pd.DataFrame) -> None:
        """``frame`` as CSV; gzip-compressed where ``name`` ends in ``.gz`` (pandas reads it as it is), with
        no timestamp in the header, so that the same frame gives the same bytes (a rebuild compares them)."""
        text = frame.to_csv(index=False)
        if not name.endswith(".gz"):
            return self.text(name, text)
        path = self._claim(name, None)
        data = gzip.compress(text.encode(), compresslevel=9, mtime=0)
        write_or_fail(self.folder, lambda: atomic_write_bytes(path, data))

    def figure(self, name: str, plot: Callable[..., Any], *args: Any, description: str | None = None) -> Any:
        """``plot(*args, path)``, which draws and saves the figure; returns what it returns. With
        ``vector``, the figure's PDF beside it is written and listed too."""
        from posbench.report.drawing.plot import vector_copies  # matplotlib only where a figure is drawn

        path = self._claim(name, description)
        with vector_copies(self.vector):
            result = write_or_fail(self.folder, lambda: plot(*args, path))
        if self.vector and (pdf := vector_path(path)).is_file():
            self.written[pdf.name] = f"`{name}` as a PDF (vector, for print)"
        return result


def write_or_fail(folder: Path, write: Callable[[], Any]) -> Any:
    try:
        return write()
    except OSError as e:
        raise PosbenchError(f"cannot write the report into {str(folder)!r}: {e.strerror or e}") from None
