"""scripts/restat.py: a committed report's statistics recomputed from its own records, and records of
the same runs retrained later merged in only where they reproduce the shared ones."""

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).parents[2]
QUICK = ROOT / "results" / "quick"


def restat(folder: Path, *extra: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(ROOT / "scripts" / "restat.py"), str(folder), *(a for x in extra for a in ("--with", str(x)))]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)


@pytest.fixture
def report_without_controls(tmp_path) -> Path:
    """results/quick's records without its +swaL rows, as a report scored before the control existed."""
    folder = tmp_path / "report"
    folder.mkdir()
    evals = pd.read_csv(QUICK / "evaluations.csv")
    evals[~evals["variant"].str.endswith("+swaL")].to_csv(folder / "evaluations.csv", index=False)
    return folder


def test_records_of_the_same_runs_add_the_rows_the_report_lacked(report_without_controls):
    before = restat(report_without_controls)
    assert before.returncode == 0, before.stderr[-2000:]
    assert set(pd.read_csv(report_without_controls / "restat.csv")["far_context"]) == {"no window control"}
    after = restat(report_without_controls, QUICK)
    assert after.returncode == 0, after.stderr[-2000:]
    text = (report_without_controls / "restat.md").read_text()
    assert "50 records added; the 50 it shares with this report agree to a relative perplexity difference of 0.0e+00" in text
    table = pd.read_csv(report_without_controls / "restat.csv")
    gains = table.loc[~table["windowed"] & table["16x"].notna(), "far_gain"]  # every row scored at 16x has its gain
    assert gains.notna().all() and (gains > 0).all() and "alibi+swaL" in set(table["variant"])


def test_records_that_do_not_reproduce_the_shared_ones_are_refused(report_without_controls, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(QUICK, other, ignore=shutil.ignore_patterns("*.png", "*.html"))
    evals = pd.read_csv(other / "evaluations.csv")
    evals.loc[evals["variant"] == "rope", "ppl"] *= 1.01  # another model: not the same runs
    evals.to_csv(other / "evaluations.csv", index=False)
    proc = restat(report_without_controls, other)
    assert proc.returncode != 0 and "does not reproduce this report's records" in proc.stderr
    assert "1.00e-02" in proc.stderr
