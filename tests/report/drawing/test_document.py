"""posbench/report/drawing/document.py: every heading gets a unique anchor that the contents link; a table
scrolls in its own box and sorts on the number behind the text."""

from __future__ import annotations

import re

import pandas as pd

from posbench.report.drawing.document import (
    Bullets,
    Contents,
    Heading,
    Table,
    render,
    slug,
    sort_key,
)


def test_every_heading_gets_a_unique_anchor_and_the_contents_link_them(tmp_path):
    blocks = [Heading("posbench-report", 1), Contents(), Heading("Summary"), Bullets(["a", "b"], "**lead**"),
              Heading("Tuned learning rates (lr x lr_mult)"), Heading("Summary")]
    md, page = render(blocks, tmp_path, "t")
    ids = re.findall(r'<h\d id="([^"]+)"', page)
    assert ids == ["posbench-report", "summary", "tuned-learning-rates-lr-x-lr_mult", "summary-1"]
    assert all(f'href="#{a}"' in page for a in ids[1:]) and "[Summary](#summary-1)" in md
    assert '<meta name="viewport"' in page and "<script>" in page
    assert "**lead**\n- a\n- b" in md and "<ul><li>a</li><li>b</li></ul>" in page


def test_a_table_scrolls_in_its_own_box_and_sorts_on_the_number_behind_the_text(tmp_path):
    frame = pd.DataFrame({"variant": ["rope", "alibi"], "1x": ["**5.53 [5.07, 6.02]**", "12.10 [11.0, 13.2] ≈"],
                          "verdict": ["broken", "flat"]})
    keys = pd.DataFrame({"verdict": [3.0, 0.0]})
    page = Table(frame, keys).html(tmp_path)
    assert page.startswith('<div class="scroll"')
    assert '<td data-v="5.53"><strong>5.53 [5.07, 6.02]</strong></td>' in page and 'data-v="12.1"' in page
    assert '<td data-v="3" class="t">broken</td>' in page and '<td class="t">rope</td>' in page  # text: left, by text
    assert sort_key("n/d") is None and sort_key("1,024") == 1024 and slug("Do the models use far context? Tasks") == \
        "do-the-models-use-far-context-tasks"


def test_a_bar_inside_a_cell_is_escaped_so_the_markdown_table_keeps_its_columns():
    # model labels such as "small|base=500" (a RoPE base axis) once split a cell into two
    frame = pd.DataFrame({"model": ["small|base=500", "small"], "a|b": ["1.0", "2.0"]})
    links = pd.DataFrame({"model": ["x.md", ""], "a|b": ["", ""]})
    for md in (Table(frame).md(None), Table(frame, links=links).md(None)):
        lines = md.splitlines()
        assert all(len(re.split(r"(?<!\\)\|", line)) == 4 for line in lines)  # two cells, bars at both ends
        assert "a\\|b" in lines[0] and "small\\|base=500" in lines[2]
    assert "[small\\|base=500](x.md)" in Table(frame, links=links).md(None)
