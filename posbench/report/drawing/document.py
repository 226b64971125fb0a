"""One report, two renderings: ``report.md`` and ``report.html`` (inline CSS and script; opens offline
in any browser), both showing the figures that lie beside them in the report's folder.

A report is a list of blocks; each block renders itself to markdown and to HTML, so the two files
always say the same thing. The page around the HTML blocks (stylesheet, sorting, contents) is
posbench/report/drawing/page.py."""

from __future__ import annotations

import html
import math
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from posbench.report.drawing.page import page, toc_html, toc_md
from posbench.report.drawing.png import vector_path


def _inline_html(text: str) -> str:
    """The little markdown the generated text uses: `code` and **bold**."""
    s = html.escape(text)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)


def slug(text: str) -> str:
    """The anchor GitHub gives a markdown heading (lower case, punctuation dropped, spaces to
    hyphens), so that the contents' links work in report.md on GitHub and in report.html alike."""
    s = unicodedata.normalize("NFKC", text).lower()
    s = "".join(ch for ch in s if ch.isalnum() or ch in " -_")
    return s.replace(" ", "-")


@dataclass
class Heading:
    text: str
    level: int = 2
    anchor: str = ""  # set by render(): unique within the report

    def md(self, _):
        return "#" * self.level + " " + self.text

    def html(self, _):
        return f'<h{self.level} id="{self.anchor or slug(self.text)}">{html.escape(self.text)}</h{self.level}>'


@dataclass
class Contents:
    """Where the table of contents goes: every level-2 heading of the report, linked."""

    entries: list = field(default_factory=list)  # (text, anchor), filled by render()

    def md(self, _):
        return toc_md(self.entries)

    def html(self, _):
        return toc_html(self.entries)


@dataclass
class Para:
    text: str

    def md(self, _):
        return self.text

    def html(self, _):
        return f"<p>{_inline_html(self.text)}</p>"


@dataclass
class Bullets:
    """A short list (a summary reads faster as one line per class than as a paragraph), under an
    optional lead line. In markdown the list follows the lead line directly, which GitHub renders
    as a paragraph and a list."""

    items: list[str]
    lead: str | None = None

    def md(self, _):
        lines = [f"- {item}" for item in self.items]
        return "\n".join(([self.lead] if self.lead else []) + lines)

    def html(self, _):
        lead = f"<p>{_inline_html(self.lead)}</p>" if self.lead else ""
        return lead + "<ul>" + "".join(f"<li>{_inline_html(i)}</li>" for i in self.items) + "</ul>"


LEADING_NUMBER = re.compile(r"^\**\s*(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)")


def sort_key(text: str) -> float | None:
    """The number a cell sorts by when the table gives none: its leading number ("5.53 [5.07, 6.02]"
    sorts as 5.53, "12%" as 12); None for a cell that does not start with one (sorted as text)."""
    m = LEADING_NUMBER.match(text.replace(",", ""))
    return float(m.group(1)) if m else None


@dataclass
class Table:
    """A table; in HTML it scrolls inside its own box and sorts by any clicked header.

    ``keys``: numbers to sort by (same index, columns named like the frame's) where the text's
    leading number is not the order (a verdict, a rank); ``row_class``: a CSS class per row
    (``control`` greys a control row); ``css``: extra classes of the table; ``links``: a link per cell
    (same shape; empty: none); ``cell_class``: a CSS class per cell (a verdict's colour); ``titles``:
    a tooltip per cell (what the cell was read at)."""

    frame: pd.DataFrame  # cells already formatted as text where it matters
    keys: pd.DataFrame | None = None
    row_class: list[str] | None = None
    css: str = ""
    links: pd.DataFrame | None = None
    cell_class: pd.DataFrame | None = None
    titles: pd.DataFrame | None = None

    def _at(self, frame: pd.DataFrame | None, i: int, c) -> str:
        return _text(frame.iat[i, frame.columns.get_loc(c)]) if frame is not None and c in frame.columns else ""

    def md(self, _):
        if self.links is None:
            return markdown_table(self.frame)
        frame, links = self.frame.reset_index(drop=True), self.links.reset_index(drop=True)
        shown = markdown_cells(frame)
        for i in range(len(frame)):
            for c in frame.columns:
                if (href := self._at(links, i, c)) and _text(frame.at[i, c]):
                    shown.at[i, c] = f"[{shown.at[i, c]}]({href})"
        return shown.to_markdown(index=False, disable_numparse=True)

    def html(self, _):
        frame = self.frame.reset_index(drop=True)
        keys = self.keys.reset_index(drop=True) if self.keys is not None else None
        head = "".join(f'<th scope="col">{html.escape(str(c))}</th>' for c in frame.columns)
        rows = []
        for i in range(len(frame)):
            cells = []
            for c in frame.columns:
                text = _text(frame.at[i, c])
                key = keys.at[i, c] if keys is not None and c in keys.columns else sort_key(text)
                attr = f' data-v="{float(key):.12g}"' if _finite(key) else ""
                classes = " ".join(x for x in ("t" if sort_key(text) is None else "",  # words read from the left
                                               self._at(self.cell_class, i, c)) if x)
                attr += f' class="{classes}"' if classes else ""
                if title := self._at(self.titles, i, c):
                    attr += f' title="{html.escape(title)}"'
                inner = _bold(html.escape(text))
                if (href := self._at(self.links, i, c)) and text:
                    inner = f'<a href="{html.escape(href)}">{inner}</a>'
                cells.append(f"<td{attr}>{inner}</td>")
            cls = f' class="{self.row_class[i]}"' if self.row_class and self.row_class[i] else ""
            rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
        classes = f"tbl {self.css}".strip()
        table = f'<table class="{classes}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        return f'<div class="scroll" tabindex="0">{table}</div>'


def markdown_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every ``|`` of its text cells and headers escaped as ``\\|``: a ``|`` inside a cell
    (a model label ``small|base=500``) would otherwise end the cell and shift every column after it."""
    shown = frame.reset_index(drop=True).copy()
    for i in range(shown.shape[1]):  # only text cells that hold a "|": every other cell keeps its value and dtype
        col = shown.iloc[:, i]
        if not pd.api.types.is_numeric_dtype(col) and col.map(lambda v: isinstance(v, str) and "|" in v).any():
            shown.iloc[:, i] = col.map(lambda v: v.replace("|", "\\|") if isinstance(v, str) else v)
    shown.columns = [c.replace("|", "\\|") if isinstance(c, str) else c for c in shown.columns]
    return shown


def markdown_table(frame: pd.DataFrame) -> str:
    """A frame as a GitHub markdown table, its cells' ``|`` escaped (``markdown_cells``)."""
    return markdown_cells(frame).to_markdown(index=False, disable_numparse=True)


def _text(v) -> str:
    if isinstance(v, str):
        return v
    return "" if v is None or (not isinstance(v, (list, tuple)) and pd.isna(v)) else str(v)


def _finite(v) -> bool:
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _bold(s: str) -> str:
    return re.sub(r"\*\*([^*<]+)\*\*", r"<strong>\1</strong>", s)


@dataclass
class Image:
    file: str
    alt: str

    def vector(self, folder: Path) -> str:
        """The figure's vector copy beside it (posbench-report --vector), "" where there is none."""
        pdf = vector_path(Path(self.file))
        return str(pdf) if (Path(folder) / pdf).is_file() else ""

    def md(self, folder):
        pdf = self.vector(folder) if folder is not None else ""
        return f"![{self.alt}]({self.file})" + (f" ([PDF]({pdf}))" if pdf else "")

    def html(self, folder: Path):
        # click to enlarge: the figure is its own :target, shown at full size over the page (CSS in
        # page.py); no script. The image is linked, not embedded: the PNG beside report.html is the one
        # copy (embedded, every committed report held each figure twice, a third larger in base64)
        anchor = "fig-" + slug(Path(self.file).stem.replace("_", "-"))
        alt = html.escape(self.alt)
        pdf = self.vector(folder) if folder is not None else ""
        vector_link = f'; <a href="{html.escape(pdf)}">PDF</a>' if pdf else ""
        return (f'<figure id="{anchor}"><a class="close" href="#_">close ✕</a>'
                f'<a href="#{anchor}" title="enlarge"><img alt="{alt}" src="{html.escape(self.file)}"></a>'
                f"<figcaption>{alt} (click to enlarge{vector_link})</figcaption></figure>")


@dataclass
class Code:
    text: str
    summary: str | None = None  # collapsed under this title (HTML <details>; markdown shows it plainly)

    def md(self, _):
        block = f"```\n{self.text.rstrip()}\n```"
        return block if self.summary is None else f"<details><summary>{self.summary}</summary>\n\n{block}\n\n</details>"

    def html(self, _):
        pre = f"<pre>{html.escape(self.text.rstrip())}</pre>"
        return pre if self.summary is None else f"<details><summary>{html.escape(self.summary)}</summary>{pre}</details>"


def number_headings(blocks: list) -> list[tuple[str, str]]:
    """Give every heading a unique anchor (GitHub's: a repeated one gets -1, -2, ...); returns the
    level-2 headings' (text, anchor) for the contents."""
    seen: dict[str, int] = {}
    entries = []
    for b in blocks:
        if isinstance(b, Heading):
            base = slug(b.text)
            n = seen.get(base, 0)
            seen[base] = n + 1
            b.anchor = base if n == 0 else f"{base}-{n}"
            if b.level == 2:
                entries.append((b.text, b.anchor))
    return entries


def render(blocks: list, folder: Path, title: str) -> tuple[str, str]:
    """(markdown, html) of the blocks; images are read from ``folder``."""
    entries = number_headings(blocks)
    for b in blocks:
        if isinstance(b, Contents):
            b.entries = entries
    md = "\n\n".join(b.md(folder) for b in blocks) + "\n"
    body = "\n".join(b.html(folder) for b in blocks)
    return md, page(title, body)
