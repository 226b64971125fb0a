"""Screenshots of a report's first screen at laptop and phone width, to look at the layout:

    python scripts/screenshot_report.py REPORT_HTML OUT_DIR

writes OUT_DIR/report-1400.png and OUT_DIR/report-420.png (1400 x 900 and 420 x 900 px). Drives the
Chromium on PATH (or $POSBENCH_CHROMIUM) through Playwright, as tests/report/drawing/test_page.py does;
docs/testing.md says how to install both."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

SIZES = {1400: 900, 420: 900}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    report, out = Path(argv[0]).resolve(), Path(argv[1])
    if not report.is_file():
        print(f"no such report: {report}", file=sys.stderr)
        return 2
    browser_path = os.environ.get("POSBENCH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser_path:
        print("no Chromium on PATH (apt-get install chromium; docs/testing.md)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        page = browser.new_page()
        for width, height in SIZES.items():
            page.set_viewport_size({"width": width, "height": height})
            page.goto(report.as_uri())
            path = out / f"report-{width}.png"
            page.screenshot(path=str(path))
            print(path)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
