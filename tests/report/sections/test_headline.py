"""The headline section (posbench/report/sections/headline.py): one row per encoding, best rank first,
then the contents."""

from posbench.report.sections.headline import Headline
from tests.conftest import ENCODINGS
from tests.helpers import run_section


def test_the_headline_has_a_row_per_encoding_and_protocol_and_the_contents(sweep_context, tmp_path):
    md, written = run_section(Headline, sweep_context, tmp_path)
    assert md.startswith("## Headline") and written == {}
    rows = [line.split("|")[1].strip() for line in md.splitlines() if line.startswith("| ") and "encoding" not in line]
    assert sorted(set(rows)) == sorted(ENCODINGS) and len(rows) == len(ENCODINGS) * 3  # three protocols
    assert "`4x/1x`: the longest multiple's perplexity over 1x" in md and "**Contents:**" in md
