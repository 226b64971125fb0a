"""The perplexity section (posbench/report/sections/perplexity.py): the main table in every format, the
runs, the comparisons, the records compared, and perplexity against length."""

import pandas as pd

from posbench.report.sections.perplexity import Perplexity, plot_ppl_vs_length
from tests.conftest import ENCODINGS
from tests.helpers import run_section


def test_the_perplexity_section_writes_what_it_declares(sweep_context, tmp_path):
    md, written = run_section(Perplexity, sweep_context, tmp_path)
    assert sorted(written) == sorted(f.name for f in Perplexity.files)
    table = pd.read_csv(tmp_path / "table.csv")
    assert len(table) == len(ENCODINGS) * 3 and set(table["variant"]) == set(ENCODINGS)
    assert len(pd.read_csv(tmp_path / "runs.csv")) == len(ENCODINGS) * 2 * 3  # each run, each protocol
    assert "\\begin{tabular}" in (tmp_path / "table.tex").read_text()
    assert md.startswith("## Perplexity by evaluation length") and "![" in md


def test_the_sweep_s_table_makes_its_figure(sweep_context, tmp_path):
    plot_ppl_vs_length(sweep_context.table, tmp_path / "ppl.png")
    assert (tmp_path / "ppl.png").read_bytes().startswith(b"\x89PNG")
