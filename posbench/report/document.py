"""One report, two renderings: ``report.md`` (images beside it) and a self-contained
``report.html`` (images embedded as base64, inline CSS; opens offline in any browser).

A report is a list of blocks; each block renders itself to markdown and to HTML, so the two files
always say the same thing."""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


def _inline_html(text: str) -> str:
    """The little markdown the generated text uses: `code` and **bold**."""
    s = html.escape(text)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)


@dataclass
class Heading:
    text: str
    level: int = 2

    def md(self, _):
        return "#" * self.level + " " + self.text

    def html(self, _):
        return f"<h{self.level}>{html.escape(self.text)}</h{self.level}>"


@dataclass
class Para:
    text: str

    def md(self, _):
        return self.text

    def html(self, _):
        return f"<p>{_inline_html(self.text)}</p>"


@dataclass
class Table:
    frame: pd.DataFrame  # cells already formatted as text where it matters

    def md(self, _):
        return self.frame.to_markdown(index=False, disable_numparse=True)

    def html(self, _):
        shown = self.frame.map(lambda v: v if isinstance(v, str) else ("" if pd.isna(v) else str(v)))
        body = shown.to_html(index=False, escape=True, border=0, classes="tbl")
        return re.sub(r"\*\*([^*<]+)\*\*", r"<strong>\1</strong>", body)


@dataclass
class Image:
    file: str
    alt: str

    def md(self, _):
        return f"![{self.alt}]({self.file})"

    def html(self, folder: Path):
        data = base64.b64encode((folder / self.file).read_bytes()).decode()
        return f'<figure><img alt="{html.escape(self.alt)}" src="data:image/png;base64,{data}"><figcaption>{html.escape(self.alt)}</figcaption></figure>'


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


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #ddd;padding-bottom:.2em}h2{border-bottom:1px solid #eee;padding-bottom:.15em;margin-top:1.8em}
table.tbl{border-collapse:collapse;font-size:.85em;margin:.6em 0}table.tbl th,table.tbl td{border:1px solid #ccc;padding:.25em .55em;text-align:right;white-space:nowrap}
table.tbl th{background:#f3f3f3}table.tbl td:nth-child(-n+4){text-align:left}table.tbl tr:nth-child(even){background:#fafafa}
figure{margin:1em 0}img{max-width:100%;border:1px solid #eee}figcaption{font-size:.85em;color:#555}
code,pre{background:#f5f5f5;border-radius:3px}pre{padding:.6em;overflow-x:auto;font-size:.8em}details{margin:.3em 0}
"""


def render(blocks: list, folder: Path, title: str) -> tuple[str, str]:
    """(markdown, html) of the blocks; images are read from ``folder``."""
    md = "\n\n".join(b.md(folder) for b in blocks) + "\n"
    body = "\n".join(b.html(folder) for b in blocks)
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n")
    return md, page
