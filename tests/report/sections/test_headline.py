"""The headline section (posbench/report/sections/headline.py): one row per encoding, best rank first,
then the contents."""

import re

from posbench.report.sections.headline import Headline
from tests.conftest import ENCODINGS
from tests.helpers import run_section


def test_the_headline_has_a_row_per_encoding_and_protocol_and_the_contents(sweep_context, tmp_path):
    md, written = run_section(Headline, sweep_context, tmp_path)
    assert md.startswith("## Headline") and written == {}
    lines = [line for line in md.splitlines() if line.startswith("| ") and "encoding" not in line]
    panels, rows = [line.split("|")[1].strip() for line in lines], [line.split("|")[2].strip() for line in lines]
    assert sorted(set(rows)) == sorted(ENCODINGS) and len(rows) == len(ENCODINGS) * 3  # three protocols
    # the panel (here the protocol) first, its rows together
    assert md.splitlines()[2].startswith("| protocol ") and len({p for p in panels}) == 3
    assert [p for i, p in enumerate(panels) if i == 0 or p != panels[i - 1]] == list(dict.fromkeys(panels))
    assert "`4x/1x`: the longest multiple's perplexity over 1x" in md and "**Contents:**" in md


def test_the_verdict_cells_are_coloured_by_their_class_in_html(sweep_context, tmp_path):
    from posbench.report.drawing.document import render
    from posbench.report.section import SectionOutput

    section = Headline()
    _, page = render(section.build(sweep_context, SectionOutput(tmp_path, section, {})), tmp_path, "t")
    cells = re.findall(r'<td[^>]*class="[^"]*\bv-(flat|mild|undecided|broken)\b[^"]*"[^>]*>([^<]*)</td>', page)
    assert cells and all(text.split(",")[0] == cls for cls, text in cells)
