"""scripts/tokenizer_partners.py on made-up committed records: two report folders read together give the
report's partners table (posbench/report/analysis/tokenizers.py), and records with no partner are one line
and exit 1."""

from __future__ import annotations

import pandas as pd

from posbench.report.records.committed import EVALUATIONS
from tests.helpers import records


def committed(folder, evals: pd.DataFrame):
    folder.mkdir()
    evals.to_csv(folder / EVALUATIONS, index=False)
    return folder


def test_two_folders_read_together_split_the_gap_into_steps_and_tokenizer(script, tmp_path, capsys):
    """The numbers of tests/report/sections/test_tokenizers.py's partners test, with the byte arm at the subword
    arm's steps in a second folder: steps carry 74% of the log-gap."""
    byte = records({("nope", 1000): (5.0, 9.0), ("nope", 386): (6.0, 7.8)})
    bpe = records({("nope", 386): (8.0, 9.28)}).assign(model="m/bpe", run_id=lambda d: d["run_id"] + "_bpe")
    first = committed(tmp_path / "tokenizers", pd.concat([byte[byte["budget_steps"] == 1000], bpe], ignore_index=True))
    steps = committed(tmp_path / "tokenizers_steps", byte[byte["budget_steps"] == 386])
    assert script("tokenizer_partners").main([str(first), str(steps)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| encoding ") and "| bpe (386 steps) " in out
    row = next(line for line in out.splitlines() if line.startswith("| nope"))
    assert "74%" in row and "1.16" in row and "1.80" in row


def test_records_with_no_byte_partner_at_both_budgets_are_one_line_and_exit_1(script, tmp_path, capsys):
    byte = records({("nope", 1000): (5.0, 9.0)})
    bpe = records({("nope", 386): (8.0, 9.28)}).assign(model="m/bpe", run_id=lambda d: d["run_id"] + "_bpe")
    first = committed(tmp_path / "tokenizers", pd.concat([byte, bpe], ignore_index=True))
    assert script("tokenizer_partners").main([str(first)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tokenizer_partners: no subword row of") and err.count("\n") == 1
