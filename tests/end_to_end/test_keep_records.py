"""scripts/keep_records.py: a study's ended runs are kept as records as they finish (what the report
reads and a resumed sweep needs to skip them), never a run a process is still working on, never the
weights; a folder git ignores is refused before anything is written."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def keep(runs: Path, dest: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "keep_records.py"), str(runs), str(dest)],
                          capture_output=True, text=True, timeout=120)


def test_ended_runs_are_kept_without_weights_and_a_locked_one_is_left(sweep, tmp_path):
    from posbench.store.lock import run_lock

    runs = tmp_path / "runs"
    shutil.copytree(sweep[0], runs)
    run_dirs = sorted(p for p in runs.iterdir() if (p / "metrics.json").exists())
    assert any((p / "checkpoint.pt").exists() for p in run_dirs)
    with run_lock(run_dirs[0]):  # a run a process works on (posbench-eval adding records, say)
        proc = keep(runs, tmp_path / "kept")
    assert proc.returncode == 0, proc.stderr
    assert f"{len(run_dirs) - 1} runs copied" in proc.stdout and "1 unfinished or in use left" in proc.stdout
    kept = tmp_path / "kept"
    assert not (kept / run_dirs[0].name).exists()
    assert not list(kept.rglob("checkpoint.pt")) and not list(kept.rglob("resume.pt"))
    assert all((kept / p.name / "metrics.json").read_bytes() == (p / "metrics.json").read_bytes() for p in run_dirs[1:])
    assert list(kept.glob(".hydra/*/multirun.yaml"))  # the sweep's command, which the report reads
    again = keep(runs, kept)  # nothing changed: nothing copied, and the locked run now is
    assert "1 runs copied" in again.stdout and "0 unfinished or in use left" in again.stdout


def test_a_folder_git_ignores_is_refused_with_nothing_written(tmp_path):
    (tmp_path / "runs").mkdir()
    dest = ROOT / "runs" / "kept-by-a-test"  # the repository ignores every folder named runs/
    proc = keep(tmp_path / "runs", dest)
    assert proc.returncode == 1 and "git ignores" in proc.stderr and not dest.exists()
