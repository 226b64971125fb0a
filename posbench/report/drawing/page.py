"""The page around report.html's blocks: the stylesheet, the few lines of script that sort a table
by a clicked header, and the table of contents. Everything is inline (no CDN, no file beside it),
so the page opens offline and shows the same thing on any machine.

Layout rules the browser test (tests/report/drawing/test_page.py) holds us to: the page never scrolls
sideways at 1400 or 420 px (a wide table scrolls inside its own box instead), and the headline table
sits in the first screen."""

from __future__ import annotations

import html

CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1200px;margin:1.5em auto;padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #ddd;padding-bottom:.2em;margin:.2em 0 .3em}h2{border-bottom:1px solid #eee;padding-bottom:.15em;margin-top:1.8em}
p,li,summary{overflow-wrap:anywhere}ul{padding-left:1.3em}li{margin:.15em 0}
.scroll{overflow-x:auto;max-width:100%;margin:.6em 0}
table.tbl{border-collapse:collapse;font-size:.85em}table.tbl th,table.tbl td{border:1px solid #ccc;padding:.25em .55em;text-align:right;white-space:nowrap}
table.tbl th{background:#f3f3f3;cursor:pointer;user-select:none;text-align:left}table.tbl tr:nth-child(even){background:#fafafa}
table.tbl:not(.headline) td:nth-child(-n+4),table.tbl td.t{text-align:left}
table.tbl th[aria-sort=ascending]::after{content:" \\25B2"}table.tbl th[aria-sort=descending]::after{content:" \\25BC"}
table.headline{border-collapse:separate;border-spacing:0}table.headline th,table.headline td{border-width:0 1px 1px 0}
table.headline tr:first-child th{border-top-width:1px}table.headline th:first-child,table.headline td:first-child{border-left-width:1px}
table.headline td:first-child,table.headline th:first-child{position:sticky;left:0;background:#fff;z-index:1}
table.headline tr:nth-child(even) td:first-child{background:#fafafa}table.headline th:first-child{background:#f3f3f3}table.headline tr.control td{color:#666;font-style:italic}
nav.toc{font-size:.9em;background:#fafafa;border:1px solid #eee;padding:.4em .8em;margin:1em 0}
nav.toc ol{margin:.2em 0;padding-left:1.4em;columns:2 16em}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee;cursor:zoom-in}figcaption{font-size:.85em;color:#555}
figure .close{display:none}
figure:target{position:fixed;inset:0;margin:0;z-index:10;background:rgba(255,255,255,.98);overflow:auto;padding:2.5em 1em 1em}
figure:target img{max-width:none;cursor:default}
figure:target .close{display:block;position:fixed;top:.4em;right:1em;font-size:1.1em;background:#fff;padding:.1em .5em;border:1px solid #ccc;border-radius:3px}
@media (max-width:600px){body{margin:.8em auto;padding:0 .6em}h1{font-size:1.5em}h2{font-size:1.25em}}
td.v-flat{background:#e3f2e1}td.v-mild{background:#fdf3d6}td.v-undecided{background:#eeeeee}td.v-broken{background:#f8dcdc}
code,pre{background:#f5f5f5;border-radius:3px}pre{padding:.6em;overflow-x:auto;font-size:.8em}details{margin:.3em 0}
"""

# Sort a table by the clicked header: numbers by each cell's data-v (the value behind "5.53 [5.07, 6.02]"),
# other cells by their text, numbers before text; a second click reverses.
SCRIPT = """
document.querySelectorAll("table.tbl th").forEach(function (th) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0], i = th.cellIndex;
    var up = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    function key(td) { return td.dataset.v === undefined ? td.textContent : parseFloat(td.dataset.v); }
    Array.from(body.rows).sort(function (a, b) {
      var x = key(a.cells[i]), y = key(b.cells[i]);
      if (typeof x !== typeof y) return typeof x === "number" ? -1 : 1;
      return (typeof x === "number" ? x - y : x.localeCompare(y)) * (up ? 1 : -1);
    }).forEach(function (row) { body.appendChild(row); });
  });
});
"""


def toc_html(entries: list[tuple[str, str]]) -> str:
    """The table of contents: (heading text, anchor) of every section."""
    items = "".join(f'<li><a href="#{a}">{html.escape(t)}</a></li>' for t, a in entries)
    return f'<nav class="toc" aria-label="contents"><strong>Contents</strong><ol>{items}</ol></nav>'


def toc_md(entries: list[tuple[str, str]]) -> str:
    return "**Contents:** " + " · ".join(f"[{t}](#{a})" for t, a in entries)


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>\n{body}\n"
            f"<script>{SCRIPT}</script>\n</body></html>\n")
