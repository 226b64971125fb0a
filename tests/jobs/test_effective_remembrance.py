"""scripts/effective_remembrance.py and its job: EffRem curves of real runs, with intervals over seeds and
windows; bad input is one line and writes nothing."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from posbench.core.errors import PosbenchError
from posbench.jobs.effective_remembrance import compute, run_dirs
from posbench.report.analysis.effective_remembrance import summarise

ROOT = Path(__file__).parents[2]


def test_curves_of_the_shared_sweep_per_row_with_intervals(sweep, tmp_path):
    runs, _, _ = sweep
    values = compute([runs], multiple=2, n_windows=3, n_cuts=4, only=["alibi", "nope"])
    assert set(values["encoding"]) == {"alibi", "nope"} and set(values["seed"]) == {0, 1}
    assert (values.loc[values["t"] == 0, "tv"] == 0).all() and values["tv"].between(0, 1).all()
    summary = summarise(values)
    assert set(summary["runs"]) == {2} and (summary["lo"] <= summary["mean"] + 1e-12).all()
    assert (summary["mean"] <= summary["hi"] + 1e-12).all()
    assert (summary["kept"] == summary["T"] - summary["t"]).all()


def test_the_script_writes_its_tables_and_figure(sweep, tmp_path):
    runs, _, _ = sweep
    out = tmp_path / "effrem"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "effective_remembrance.py"), str(runs), "--out", str(out),
                           "--only", "rope", "--multiple", "2", "--windows", "2", "--cuts", "3"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in out.iterdir()} == {"effrem.csv", "effrem_summary.csv", "effrem.png"}
    assert "| rope (" in proc.stdout and len(pd.read_csv(out / "effrem_summary.csv")) > 0
    again = tmp_path / "again"  # the summary again from the saved values, no model run
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "effective_remembrance.py"), "--values",
                           str(out / "effrem.csv"), "--out", str(again)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (again / "effrem_summary.csv").read_text() == (out / "effrem_summary.csv").read_text()


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "effective_remembrance.py"), str(tmp_path / "none"),
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "neither a run directory" in proc.stderr
    assert not out.exists()
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "effective_remembrance.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "one of the two" in proc.stderr and not out.exists()
    with pytest.raises(PosbenchError, match="cuts >= 2"):
        compute([tmp_path], multiple=2, n_windows=2, n_cuts=1)
    with pytest.raises(PosbenchError, match="neither a run directory"):
        run_dirs([tmp_path])
