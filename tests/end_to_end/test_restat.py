"""scripts/restat.py: a committed report's statistics recomputed from its own records, and the records
of some of its runs retrained later taken whole (a row and its control from the same weights), only
where they reproduce the records both hold."""

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
    assert "every record of its 5 runs on nonoverlapping, sliding windows (100 records, 50 of rows this report lacked)" in text
    assert "at most 0.0e+00 (alibi), 0.0e+00 (learned)" in text
    table = pd.read_csv(report_without_controls / "restat.csv")
    gains = table.loc[~table["windowed"] & table["16x"].notna(), "far_gain"]  # every row scored at 16x has its gain
    assert gains.notna().all() and (gains > 0).all() and "alibi+swaL" in set(table["variant"])


def retrained(tmp_path, change: float, protocol: str | None = None) -> Path:
    """results/quick's records with rope's perplexities changed by ``change`` (relative), as if rope were
    retrained on numerically different code (``protocol``: and scored on that protocol only)."""
    other = tmp_path / f"other{change}"
    other.mkdir()
    evals = pd.read_csv(QUICK / "evaluations.csv")
    evals.loc[evals["encoding"] == "rope", "ppl"] *= 1 + change
    evals = evals[evals["protocol"] == protocol] if protocol else evals
    evals.to_csv(other / "evaluations.csv", index=False)
    return other


def test_a_retrained_run_replaces_all_its_records_and_its_difference_is_stated(report_without_controls, tmp_path):
    """A retrained run's records on the protocols the other folder scored replace the report's; its
    other protocols stay as they were (panels, and a row's pairing with its control, are per protocol)."""
    proc = restat(report_without_controls, retrained(tmp_path, 0.002, "nonoverlapping"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2.0e-03 (rope)" in (report_without_controls / "restat.md").read_text()
    table = pd.read_csv(report_without_controls / "restat.csv").set_index(["protocol", "variant"])
    rope = pd.read_csv(QUICK / "evaluations.csv").query("variant == 'rope' and length == 64").set_index("protocol")["ppl"]
    assert table.loc[("nonoverlapping", "rope"), "1x"] == pytest.approx(rope["nonoverlapping"] * 1.002, rel=1e-6)
    assert table.loc[("sliding", "rope"), "1x"] == pytest.approx(rope["sliding"], rel=1e-6)
    assert ("nonoverlapping", "rope+swaL") in table.index and ("sliding", "rope+swaL") not in table.index


def test_records_that_do_not_reproduce_the_shared_ones_are_refused(report_without_controls, tmp_path):
    proc = restat(report_without_controls, retrained(tmp_path, 0.05))  # another model: not the same runs
    assert proc.returncode != 0 and "does not reproduce this report's records" in proc.stderr
    assert "5.00e-02" in proc.stderr
