"""Keep a study's finished runs as records, as they finish: every run directory under RUNS whose
metrics.json says it ended (completed or diverged) and which no process is working on (its lock is
free) is copied into DEST, less its weights and resume state, with the sweeps' commands:

    python scripts/keep_records.py RUNS DEST        # e.g. /work/runs/map results/map/lines

A machine can be lost between sessions with every run on it (2026-11-25: the budget study's first 30
runs; 2026-11-28: the map's first eight hours); committed records survive it. What is kept is what
``posbench-report`` reads and a resumed sweep needs to skip a run: config.yaml, corpus.json,
history.json, metrics.json (every evaluation, with each scored document's loss) and per_position.npz,
and RUNS/.hydra/*/multirun.yaml (each sweep's command). Left out: checkpoint.pt (the weights:
posbench-eval cannot score a kept run again), resume.pt, the lock, token_losses.npz (each scored
token's loss, read only by the key-token analysis: 0.3 MB a run at train_len 32, about 4 MB at 256, too
much for a repository; the budget study's kept records have none either), and trunks/ (a WSD trunk is no
run; a new budget retrains it, bit for bit on the same kind of CPU). A run already in DEST is
copied again only where its metrics.json changed (a later posbench-eval added records).
"""

from __future__ import annotations

import filecmp
import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from posbench.store.rundir import CONFIG, LOCK, find_runs, read_metrics

LEFT_OUT = {"checkpoint.pt", "resume.pt", LOCK, "token_losses.npz"}
ENDED = {"completed", "diverged"}


def lock_is_free(run_dir: Path) -> bool:
    """Whether no process holds the run's lock now (posbench/store/lock.py), tested without taking it
    for longer than the test."""
    path = run_dir / LOCK
    if not path.exists():
        return True
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


def ignored(path: Path) -> bool:
    """Whether git would leave ``path`` out of a commit (False outside a git work tree): the records are
    kept to be committed, and the repository ignores every folder named runs/."""
    done = subprocess.run(["git", "check-ignore", "-q", str(path)], capture_output=True,
                          cwd=path.parent if path.parent.exists() else None)
    return done.returncode == 0


def ended(run_dir: Path) -> bool:
    metrics = read_metrics(run_dir, warn=False)
    return metrics is not None and metrics.get("status") in ENDED and (run_dir / CONFIG).exists()


def keep(runs: Path, dest: Path) -> tuple[int, int]:
    """Copy RUNS' ended runs into DEST; returns (runs copied, runs left: unfinished or in use)."""
    copied = left = 0
    for run_dir in find_runs(runs):
        if not (ended(run_dir) and lock_is_free(run_dir)):
            left += 1
            continue
        target = dest / run_dir.relative_to(runs)
        if target.exists() and filecmp.cmp(run_dir / "metrics.json", target / "metrics.json", shallow=False):
            continue
        staging = target.with_name(f".{target.name}.partial")  # hidden from find_runs until it is whole
        shutil.rmtree(staging, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(run_dir, staging, ignore=lambda _d, names: [n for n in names if n in LEFT_OUT])
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        copied += 1
    for sweep in sorted(runs.glob(".hydra/*/multirun.yaml")):
        target = dest / sweep.relative_to(runs)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(sweep, target)
    return copied, left


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit(__doc__.strip())
    runs, dest = map(Path, argv)
    if not runs.is_dir():
        sys.exit(f"keep_records: {runs} is not a folder; give a runs_dir of posbench-train")
    if ignored(dest / "x" / "metrics.json"):
        sys.exit(f"keep_records: git ignores {dest} (.gitignore), so the records could not be committed; give "
                 "another folder (e.g. not named runs/)")
    copied, left = keep(runs, dest)
    print(f"keep_records: {copied} runs copied into {dest}; {left} unfinished or in use left")


if __name__ == "__main__":
    main(sys.argv[1:])
