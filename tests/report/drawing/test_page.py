"""report.html in a real browser: headless Chromium through Playwright (docs/testing.md says how to
install both). Skipped, with the reason, where either is missing. The report is the shared tiny
sweep's (conftest.py); the browser part takes a few seconds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

WIDTHS = (1400, 420)  # a laptop and a phone
HEIGHT = 900


def chromium() -> str | None:
    """The browser to drive: $POSBENCH_CHROMIUM, else the first chromium on PATH (Debian's package:
    Playwright's own download needs the network, which tests never use)."""
    return os.environ.get("POSBENCH_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


# checked when the module loads, so that a machine without them skips before the shared sweep is trained
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install -e '.[test]')")
if chromium() is None:
    pytest.skip("no Chromium here (apt-get install chromium; docs/testing.md)", allow_module_level=True)


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module (a launch took 1.5 s, once per test before): each test gets a page
    of its own in a fresh context."""
    with sync_api.sync_playwright() as p:
        running = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            yield running
        finally:
            running.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": HEIGHT})
    try:
        tab = context.new_page()
        tab.errors = []
        tab.on("console", lambda m: tab.errors.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda e: tab.errors.append(str(e)))
        yield tab
    finally:
        context.close()


def column(page, header: str) -> list[float]:
    """The sort keys (data-v) of one headline column, top to bottom."""
    return page.evaluate("""h => { const t = document.querySelector("table.headline");
        const i = [...t.tHead.rows[0].cells].findIndex(c => c.textContent.startsWith(h));
        return [...t.tBodies[0].rows].map(r => parseFloat(r.cells[i].dataset.v)); }""", header)


def reads_at_both_widths(page, html) -> None:
    """The page-level checks: no sideways scroll at a laptop's and a phone's width, the headline table
    in the first screen, every image loaded, every heading anchored and every contents link working."""
    page.goto(html.as_uri())
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        wide, inner = page.evaluate("[document.scrollingElement.scrollWidth, innerWidth]")
        assert wide <= inner, f"the page scrolls sideways at {width} px ({wide} > {inner})"
        top = page.evaluate("document.querySelector('table.headline').getBoundingClientRect().top")
        assert top < HEIGHT, f"the headline table starts below the first screen at {width} px ({top} px)"
    assert page.evaluate("document.querySelector('meta[name=viewport]') !== null")

    images = page.evaluate("[...document.images].map(i => [i.complete, i.naturalWidth])")
    assert images and all(done and w > 0 for done, w in images)

    # every heading has an anchor, and every contents link reaches one
    assert page.evaluate("[...document.querySelectorAll('h1,h2,h3')].every(h => h.id)")
    links = page.evaluate("[...document.querySelectorAll('nav.toc a')].map(a => a.getAttribute('href').slice(1))")
    missing = page.evaluate("ids => ids.filter(id => document.getElementById(id) === null)", links)
    assert links and missing == [], f"contents links that reach no heading: {missing}"


COMMITTED = sorted((Path(__file__).parents[3] / "results").glob("**/report.html"))


@pytest.mark.parametrize("html", COMMITTED, ids=[str(p.parent.relative_to(p.parents[2])) for p in COMMITTED])
def test_every_committed_report_reads_in_a_browser(html, page):
    reads_at_both_widths(page, html)
    assert page.errors == []


def test_report_html_reads_in_a_browser_at_laptop_and_phone_width(sweep_report, page):
    reads_at_both_widths(page, sweep_report / "report.html")

    # clicking a header sorts the rows by the number behind the cell, then reverses them
    before = column(page, "1x perplexity")
    names = page.evaluate("[...document.querySelectorAll('table.headline tbody tr')].map(r => r.cells[0].textContent)")
    page.click("table.headline th:has-text('1x perplexity')")
    up = column(page, "1x perplexity")
    names_up = page.evaluate("[...document.querySelectorAll('table.headline tbody tr')].map(r => r.cells[0].textContent)")
    assert sorted(before) == up
    page.click("table.headline th:has-text('1x perplexity')")
    down = column(page, "1x perplexity")
    assert down == sorted(before, reverse=True)
    after = page.evaluate("[...document.querySelectorAll('table.headline tbody tr')].map(r => r.cells[0].textContent)")
    assert len(set(before)) > 1 and sorted(after) == sorted(names) and names_up != after  # rows moved, none lost

    # a figure enlarges when clicked
    page.click("figure img")
    assert page.evaluate("getComputedStyle(document.querySelector('figure:target')).position") == "fixed"

    assert page.errors == []


def test_the_page_is_one_self_contained_html_file_with_its_contents():
    from posbench.report.drawing.page import page as html_page
    from posbench.report.drawing.page import toc_html, toc_md

    entries = [("Summary", "summary"), ("A & B", "a-b")]
    assert toc_md(entries) == "**Contents:** [Summary](#summary) · [A & B](#a-b)"
    assert '<li><a href="#a-b">A &amp; B</a></li>' in toc_html(entries)
    html = html_page("posbench <report>", "<p>body</p>")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "<title>posbench &lt;report&gt;</title>" in html and "<style>" in html and "<script>" in html
    assert 'name="viewport"' in html and "<p>body</p>" in html


@pytest.fixture(scope="module")
def rebuilt_report(tmp_path_factory) -> Path:
    """A committed report rebuilt by the current code (its committed html may predate the current
    stylesheet): results/rope_extension, a headline of 25 rows and 10 columns, wider than a phone, in
    10 s (results/modern, where the faults were seen, in 41 s)."""
    from posbench.cli.report import main

    out = tmp_path_factory.mktemp("rebuilt")
    main([str(Path(__file__).parents[3] / "results" / "rope_extension"), "--rebuild", "--out", str(out)])
    return out / "report.html"


def test_at_a_phones_width_the_sticky_first_column_keeps_every_row_border_and_the_headline_is_high(rebuilt_report, page):
    """At 420 px and device scale 1, a collapsed table's sticky column lost its borders under scrolled
    columns, and a rebuilt report's first screen was its rebuild paragraph (results/modern)."""
    from io import BytesIO

    from PIL import Image

    page.set_viewport_size({"width": WIDTHS[1], "height": HEIGHT})
    page.goto(rebuilt_report.as_uri())
    top = page.evaluate("document.querySelector('table.headline').getBoundingClientRect().top")
    assert top < HEIGHT / 2, f"the headline table starts {top} px down a phone's first screen"
    page.evaluate("""() => { const t = document.querySelector('table.headline');
        t.closest('.scroll').scrollLeft = 150; t.scrollIntoView(); }""")  # the first column now sticks over others
    rects = page.evaluate("""[...document.querySelectorAll('table.headline tbody tr')].slice(0, 12).map(r => {
        const b = r.cells[0].getBoundingClientRect(); return [b.left, b.right, b.bottom]; })""")
    shot = Image.open(BytesIO(page.screenshot())).convert("L")
    for left, right, bottom in rects:
        if bottom >= HEIGHT:
            break
        # the darkest pixel row within 2 px of the cell's lower edge: the border's grey (#ccc, 204) against a
        # row's 250 / 255
        strip = min(sum(shot.getpixel((x, y)) for x in range(int(left) + 3, int(right) - 3)) / (int(right) - int(left) - 6)
                    for y in range(int(bottom) - 2, int(bottom) + 2))
        assert strip < 235, f"no border under the sticky cell ending at y={bottom} (mean grey {strip:.0f})"
        # and its right edge, against the columns scrolled under it
        edge = min(sum(shot.getpixel((x, y)) for y in range(int(bottom) - 20, int(bottom) - 6)) / 14
                   for x in range(int(right) - 2, int(right) + 2))
        assert edge < 235, f"no border right of the sticky cell ending at y={bottom} (mean grey {edge:.0f})"


INDEX = Path(__file__).parents[3] / "results" / "index.html"


def test_the_results_index_reads_in_a_browser_with_its_first_column_in_view(page):
    """results/index.html (posbench/report/index.py): at a laptop's and a phone's width the page never
    scrolls sideways, the wide table scrolls in its own box with the encodings' column held in view, a
    cell's verdict shows as its colour and its link opens the report."""
    page.goto(INDEX.as_uri())
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        wide, inner = page.evaluate("[document.scrollingElement.scrollWidth, innerWidth]")
        assert wide <= inner, f"the index scrolls sideways at {width} px ({wide} > {inner})"
        box = page.evaluate("""() => { const s = document.querySelector('div.scroll');
            return [s.scrollWidth, s.clientWidth]; }""")
        assert box[0] > box[1], f"at {width} px the index table should be wider than its box (it has a column per study)"
        left = page.evaluate("""() => { const s = document.querySelector('div.scroll'); s.scrollLeft = s.scrollWidth;
            const first = document.querySelector('table.headline tbody td');
            return [first.getBoundingClientRect().left, s.getBoundingClientRect().left]; }""")
        assert abs(left[0] - left[1]) < 2, f"the encodings' column left the view when the table scrolled at {width} px"
    colours = page.evaluate("""() => ['v-flat', 'v-broken'].map(c =>
        getComputedStyle(document.querySelector('td.' + c)).backgroundColor)""")
    assert len(set(colours)) == 2 and "rgba(0, 0, 0, 0)" not in colours
    href = page.evaluate("document.querySelector('table.headline tbody a').href")
    page.goto(href)
    assert page.evaluate("document.querySelector('table.headline') !== null")
    assert page.errors == []
