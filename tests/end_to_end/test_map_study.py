"""scripts/map_study.sh: the study's stages call posbench-train with the words the commands
script prints, unquoted as a shell would, plus MAP_EXTRA's on every call; a grid whose choice stays on
its edge after its extension stops the study with one line instead of training the line at an unread
rate. Fast: posbench-train and posbench-report are stand-ins that record what they are given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).parents[2]


def stand_ins(tmp_path: Path, tuning: Path) -> tuple[Path, Path]:
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.txt"
    bin_dir.mkdir()
    (bin_dir / "posbench-train").write_text(f'#!/usr/bin/env bash\nprintf "%s|" "$@" >> {calls}\necho >> {calls}\n')
    (bin_dir / "posbench-report").write_text(  # --out DIR: the grid's report, here a made-up tuning.csv
        '#!/usr/bin/env bash\nwhile [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done\n'
        f'mkdir -p "$out" && cp {tuning} "$out/tuning.csv"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return bin_dir, calls


def test_an_edge_choice_is_extended_with_unquoted_words_and_a_grid_that_stays_on_it_stops(tmp_path):
    rows = [{"encoding": e, "model": "base", "train_len": 64, "lr": lr, "lr_mult": 1.0, "val_loss": 1.0, "seeds": 2,
             "chosen": lr == (1e-3 if e == "fox" else 2e-3)} for e in ("nope", "fox") for lr in (1e-3, 2e-3, 4e-3)]
    tuning = tmp_path / "tuning.csv"
    pd.DataFrame(rows).to_csv(tuning, index=False)
    bin_dir, calls = stand_ins(tmp_path, tuning)
    env = {**os.environ, "POSBENCH_BIN": str(bin_dir), "PYTHON": sys.executable,
           "MAP_EXTRA": "device=cuda precision=fp32 train.budgets=[6]"}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "map_study.sh"), str(tmp_path / "runs"), "base_edges"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1
    assert "base_edges, round 1: a choice on the grid's edge" in proc.stdout
    assert "the grid's extension did not complete (diverged?); choose the base rates by hand" in proc.stdout
    (call,) = [line.split("|")[:-1] for line in calls.read_text().splitlines()]  # round 2 trains nothing again
    assert call == ["-m", "experiment=map_lr", "model=base", "encoding=fox", "train.lr=0.0005",
                    f"runs_dir={tmp_path / 'runs'}/map_lr", "train.budgets=[300]", "device=cuda", "precision=fp32",
                    "train.budgets=[6]"]
