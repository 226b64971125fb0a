"""One page over every committed study: ``results/index.html`` and the same table in ``results/README.md``
(between its ``results-index`` markers), made from the committed reports alone (``python
scripts/results_index.py``; ``scripts/rebuild_reports.sh`` ends with it).

A study is a folder with a ``manifest.json.gz`` (or an older report's ``manifest.json``: a report posbench wrote) and its ``table.csv``. Each cell is
one encoding in one study: its verdict as the report words it and the number the verdict reads, with its
95% interval (the perplexity ratio on equal context, 16x against the lower of 1x and the window control,
where the report has the control; else 16x/1x, unequal context), at the study's main setting, linked to
the report. Display only: every word and number is the report's own ``table.csv`` cell.

The main setting of a study is its model and train_len with the most encodings (on non-overlapping
windows where it has them); a tie goes to the house's centre point (the small model at train_len 64),
then to the first in order. An encoding the study has only at other settings shows its first one. The
tooltip names the setting, the seeds and how many other settings the report has for the encoding: a
study such as the map holds many, and its report is where they are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.core.files import atomic_write_text
from posbench.report.drawing.document import Heading, Para, Table, render
from posbench.report.analysis.headline import verdict_css
from posbench.report.records.manifest import MANIFEST, OLD_MANIFEST

INDEX = "index.html"
README = "README.md"
START, END = "<!-- results-index:start -->", "<!-- results-index:end -->"
CENTRE = ("small", 64)
RATIO = re.compile(r"^(\d+(?:\.\d+)?)x/1x$")
EQUAL = "equal context"


@dataclass(frozen=True)
class Cell:
    study: str  # the report's folder, relative to the results folder
    encoding: str
    text: str  # "flat 1.00 [1.00, 1.00]"
    verdict_class: str  # flat, mild, undecided, broken, or another word (no verdict: no colour)
    setting: str  # what the cell was read at
    link: str


def is_encoding(variant: str) -> bool:
    """A variant that is an encoding alone (not a method on it, ``rope+yarn``, nor a window control)."""
    return "+" not in variant and "@" not in variant


def studies(root: Path) -> list[Path]:
    """Every committed report below ``root`` that has a main table, in path order."""
    found = {p.parent for name in (MANIFEST, OLD_MANIFEST) for p in Path(root).rglob(name)}
    return sorted(f for f in found if (f / "table.csv").is_file())


def _main_setting(rows: pd.DataFrame) -> tuple[str, int]:
    counts = rows.groupby(["model", "train_len"])["variant"].nunique().reset_index()

    def order(r) -> tuple:
        size = str(r["model"]).split("@")[0].split("/")[0]
        return (-r["variant"], (size, int(r["train_len"])) != CENTRE, str(r["model"]), int(r["train_len"]))

    best = min(counts.to_dict("records"), key=order)
    return best["model"], int(best["train_len"])


def _number(r: pd.Series, columns) -> str:
    """The statistic the verdict reads, with its interval, as the report prints it (2 decimals)."""
    if r.get("verdict_basis") == EQUAL and pd.notna(r.get("equal_ctx")):
        stat = "equal_ctx"
    else:
        stat = next((c for c in columns if RATIO.match(str(c)) and pd.notna(r.get(c))), None)
        if stat is None:
            return ""
    mean, lo, hi = r.get(stat), r.get(f"{stat}_lo"), r.get(f"{stat}_hi")
    interval = f" [{lo:.2f}, {hi:.2f}]" if pd.notna(lo) and pd.notna(hi) else ""
    return f"{mean:.2f}{interval}"


def study_cells(folder: Path, root: Path) -> list[Cell]:
    """One cell per encoding of one committed report."""
    try:
        table = pd.read_csv(folder / "table.csv")
    except (OSError, ValueError) as e:
        raise PosbenchError(f"cannot read {folder / 'table.csv'}: {e}") from None
    table = table[~table["windowed"].astype(bool) & table["variant"].map(lambda v: is_encoding(str(v)))]
    if table.empty:
        return []
    if (table["protocol"] == "nonoverlapping").any():
        table = table[table["protocol"] == "nonoverlapping"]
    model, train_len = _main_setting(table)
    name = folder.relative_to(root).as_posix()
    cells = []
    for variant, rows in table.groupby("variant", sort=True):
        at = rows[(rows["model"] == model) & (rows["train_len"] == train_len)]
        r = (at if not at.empty else rows).iloc[0]
        label = r.get("label") if isinstance(r.get("label"), str) else r.get("verdict")
        label = label if isinstance(label, str) else "no verdict"
        head = label.split(",")[0]
        number = _number(r, table.columns)
        others = len(rows) - 1
        seeds = f", {int(r['seeds'])} seeds" if pd.notna(r.get("seeds")) else ""
        basis = "equal context" if r.get("verdict_basis") == EQUAL else "16x/1x, unequal context"
        setting = (f"{r['model']}, train_len {int(r['train_len'])}{seeds}; {basis}"
                   + (f"; {others} more setting{'s' if others > 1 else ''} in the report" if others else ""))
        cells.append(Cell(name, str(variant), f"{label} {number}".strip(), head, setting, f"{name}/report.html"))
    return cells


def index_frames(root: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(cell text, verdict classes, links, tooltips): one row per encoding, one column per study."""
    cells = [c for folder in studies(root) for c in study_cells(folder, root)]
    if not cells:
        raise PosbenchError(f"no committed report with a table.csv below {str(root)!r}")
    frame = pd.DataFrame([c.__dict__ for c in cells])
    columns = list(dict.fromkeys(c.study for c in cells))
    counts = frame.groupby("encoding")["study"].nunique()
    encodings = sorted(counts.index, key=lambda e: (-counts[e], e))

    def pivot(value: str) -> pd.DataFrame:
        wide = frame.pivot(index="encoding", columns="study", values=value).reindex(index=encodings, columns=columns)
        return wide.fillna("").reset_index()

    links = pivot("link")
    links["encoding"] = ""
    return pivot("text"), pivot("verdict_class").map(verdict_css), links, pivot("setting").assign(encoding="")


def index_texts(root: Path) -> tuple[str, str]:
    """(index.html's text, the markdown table README.md holds between its markers)."""
    shown, classes, links, titles = index_frames(root)
    intro = ("Each cell: one encoding in one committed study, its verdict as the report words it and the number "
             "the verdict reads with its 95% interval (perplexity ratio, 16x against 1x: on equal context where the "
             "study has the window control), at the study's main setting (hover a cell for it), linked to the "
             "report. Made from the reports' own tables by `python scripts/results_index.py`.")
    blocks = [Heading("posbench: every committed study", 1), Para(intro),
              Table(shown, css="headline", links=links, cell_class=classes, titles=titles)]
    _, page = render(blocks, Path(root), "posbench: every committed study")
    md_links = links.map(lambda h: h.replace("report.html", "report.md") if h else h)
    return page, Table(shown, links=md_links).md(root)


def readme_block(text: str, readme: Path) -> tuple[int, int]:
    """Where README.md's index goes: (start of the START marker, end of the END marker)."""
    if START not in text or END not in text or text.index(START) > text.index(END):
        raise PosbenchError(f"{readme} has no {START} ... {END} block for the index; add the two lines where it goes")
    return text.index(START), text.index(END) + len(END)


def write_index(root: Path) -> tuple[Path, Path]:
    """Write ``root/index.html`` and the table inside ``root/README.md``'s markers; returns both paths.
    README.md must hold the markers (one line each), so that the rest of it stays the author's; nothing is
    written where it does not."""
    root = Path(root)
    readme = root / README
    text = readme.read_text() if readme.is_file() else ""
    start, end = readme_block(text, readme)
    page, table_md = index_texts(root)
    atomic_write_text(root / INDEX, page)
    atomic_write_text(readme, f"{text[:start]}{START}\n{table_md}\n{END}{text[end:]}")
    return root / INDEX, readme
