"""scripts/budget_commands.py: the budget study's commands from the learning-rate grid's choices, one
per learning rate, refused where a choice lies at the grid's edge or an encoding has none."""

import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from budget_commands import preset_encodings  # noqa: E402

GRID = [1e-3, 2e-3, 4e-3, 8e-3]


def tuning(tmp_path, picks: dict[str, float]) -> Path:
    rows = [{"encoding": e, "model": "small", "train_len": 64, "lr": lr, "lr_mult": 1.0, "val_loss": 1.0, "seeds": 1,
             "chosen": lr == pick} for e, pick in picks.items() for lr in GRID]
    path = tmp_path / "tuning.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "budget_commands.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_one_command_per_chosen_learning_rate_with_its_encodings(tmp_path):
    encodings = preset_encodings()
    picks = {e: (2e-3 if i % 2 else 4e-3) for i, e in enumerate(encodings)}
    proc = run(tuning(tmp_path, picks), "runs_dir=/tmp/budget")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2 and all(x.startswith("posbench-train -m experiment=budget encoding=") for x in lines)
    assert lines[0].endswith("train.lr=0.002 runs_dir=/tmp/budget")
    assert lines[0].split()[3] == "encoding=" + ",".join(e for e in encodings if picks[e] == 2e-3)


def test_a_choice_at_the_edge_or_a_missing_encoding_is_refused(tmp_path):
    encodings = preset_encodings()
    at_edge = run(tuning(tmp_path, {e: (8e-3 if e == encodings[0] else 2e-3) for e in encodings}))
    assert at_edge.returncode == 1 and f"{encodings[0]} chose lr 0.008, the edge of the grid" in at_edge.stderr
    missing = run(tuning(tmp_path, {e: 2e-3 for e in encodings[1:]}))
    assert missing.returncode == 1 and f"no learning rate chosen for {encodings[0]}" in missing.stderr
