"""Every report reads in short paragraphs: no paragraph of a report.md (a block of text lines between blank
lines, not a table, code, list, heading, image or HTML) is longer than LONGEST characters; a long legend
is a list of items (drawing/document.py Bullets), a table or a link to docs/."""

import re
from pathlib import Path

import pytest

LONGEST = 1100  # characters: about 1,000, with room for a long encoding or model name
RESULTS = Path(__file__).resolve().parents[2] / "results"
LIST_ITEM = re.compile(r"^\s*([-*+] |\d+[.)] )")


def paragraphs(md: str) -> list[str]:
    """The text paragraphs of a markdown page: runs of lines that are not blank, table rows, headings,
    list items (or their indented continuation), images, HTML or inside a code fence."""
    out, current, fence = [], [], False

    def close():
        if current:
            out.append(" ".join(current))
            current.clear()

    for line in md.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            close()
            continue
        text = line.strip()
        if fence or not text or text.startswith(("|", "#", "<", "!", ">")) or LIST_ITEM.match(line) or line.startswith("  "):
            close()
            continue
        current.append(text)
    close()
    return out


def test_paragraphs_are_split_where_a_list_or_a_table_begins():
    md = "One.\ntwo.\n\n- an item\n- another\n\nThree.\n| a |\n|---|\n\n```\ncode line\n```\n## Heading\nFour."
    assert paragraphs(md) == ["One. two.", "Three.", "Four."]


def long_ones(md: str) -> list[str]:
    return [f"{len(p)} characters: {p[:120]}..." for p in paragraphs(md) if len(p) > LONGEST]


def test_no_paragraph_of_a_report_is_longer_than_about_a_thousand_characters(sweep_report):
    """The tiny sweep's report (language models on three protocols, tasks where it has them)."""
    assert long_ones((sweep_report / "report.md").read_text()) == []


@pytest.mark.slow  # reads the committed reports: they pass once rebuilt with the current code
@pytest.mark.parametrize("report", sorted(RESULTS.glob("*/report.md")), ids=lambda p: p.parent.name)
def test_no_paragraph_of_a_committed_report_is_longer_than_about_a_thousand_characters(report):
    assert long_ones(report.read_text()) == []
