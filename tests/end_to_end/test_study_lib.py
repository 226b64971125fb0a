"""scripts/study_lib.sh, the frame of the CPU studies: a restore that fails stops the study before it
trains anything (it would otherwise train every kept run again); the periodic keep says a failure and
tries again at its next turn; a final keep that fails stops the study; the keeper ends with the script.
The real posbench-records runs (``python -m posbench.cli.records``), on a runs folder made here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).parents[2]


def records_bin(tmp_path: Path) -> Path:
    """A POSBENCH_BIN whose posbench-records is this Python's posbench."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cmd = bin_dir / "posbench-records"
    cmd.write_text(f'#!/usr/bin/env bash\nexec {sys.executable} -m posbench.cli.records "$@"\n')
    cmd.chmod(0o755)
    return bin_dir


def study(tmp_path: Path, body: str, keep_s: str = "600") -> subprocess.CompletedProcess:
    """``body`` run as a study script would run it: set -euo pipefail, STUDY and BIN set, the lib sourced."""
    script = tmp_path / "study.sh"
    script.write_text(f"set -euo pipefail\ncd {ROOT}\nSTUDY=toy_study BIN={records_bin(tmp_path)}\n"
                      f"source scripts/study_lib.sh\n{body}\n")
    env = {**os.environ, "KEEP_S": keep_s, "PYTHONPATH": str(ROOT)}
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=300)


def test_a_restore_that_fails_stops_the_study_before_it_trains(tmp_path):
    bad = tmp_path / "records.parquet"
    bad.write_text("not parquet")
    done = study(tmp_path, f"restore_runs {bad} {tmp_path / 'runs'}\necho TRAINING")
    assert done.returncode != 0 and "TRAINING" not in done.stdout
    assert "cannot read records" in done.stderr


def test_a_missing_records_file_is_nothing_to_restore(tmp_path):
    done = study(tmp_path, f"restore_runs {tmp_path / 'none.parquet'} {tmp_path / 'runs'}\necho TRAINING")
    assert done.returncode == 0 and "TRAINING" in done.stdout and "restore" not in done.stdout


def test_the_keeper_says_a_failure_tries_again_and_ends_with_the_script(sweep, tmp_path):
    runs, records = tmp_path / "runs", tmp_path / "kept.parquet"
    shutil.copytree(sweep[0], runs)  # keep writes its lock into the runs folder: not into the shared sweep
    records.mkdir()  # a folder where the records file should be: keep fails until it is gone
    log = tmp_path / "study.log"
    body = f"""exec >{log} 2>&1
keep() {{ keep_runs {runs} {records}; }}
start_keeper keep
until grep -q 'keeping the records failed' {log}; do sleep 0.1; done
rmdir {records}
until grep -q 'runs added or updated' {log}; do sleep 0.1; done
echo KEEPER=$KEEPER"""
    done = study(tmp_path, body, keep_s="0.2")
    assert done.returncode == 0, log.read_text()
    text = log.read_text()
    assert "[toy_study " in text and "trying again in 0.2 s" in text and records.is_file()
    keeper = int(text.rsplit("KEEPER=", 1)[1])
    deadline = time.monotonic() + 30  # the EXIT trap's SIGTERM, then the subshell's end (a zombie counts as ended)
    while running(keeper) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(keeper)


def running(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except OSError:
        return False


def test_a_final_keep_that_fails_stops_the_study(tmp_path):
    (tmp_path / "runs").mkdir()
    records = tmp_path / "kept.parquet"
    records.mkdir()
    done = study(tmp_path, f"keep_runs {tmp_path / 'runs'} {records}\necho DONE")
    assert done.returncode != 0 and "DONE" not in done.stdout


def test_a_study_that_ends_after_its_keeper_is_gone_still_exits_0(tmp_path):
    body = "keep() { :; }\nstart_keeper keep\nkill $KEEPER\nwait $KEEPER || true\necho DONE"
    done = study(tmp_path, body)
    assert done.returncode == 0 and "DONE" in done.stdout


def test_a_finished_study_does_not_keep_its_reader_waiting_for_the_keeper_s_nap(tmp_path):
    """The keeper naps KEEP_S seconds; a nap left behind at exit held the script's stdout open, so a
    caller reading it (a pipe, $(...)) waited up to 10 minutes after the study had ended."""
    start = time.monotonic()
    done = study(tmp_path, "keep() { :; }\nstart_keeper keep\necho DONE", keep_s="600")
    assert done.returncode == 0 and "DONE" in done.stdout and time.monotonic() - start < 120


def test_a_keep_interval_that_is_no_number_is_one_line_before_anything_runs(tmp_path):
    done = study(tmp_path, "echo STARTED", keep_s="10x")
    assert done.returncode == 2 and "STARTED" not in done.stdout
    assert done.stderr.strip() == "KEEP_S=10x is not a number of seconds; give e.g. KEEP_S=600"
