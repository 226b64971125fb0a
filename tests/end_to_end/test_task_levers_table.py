"""scripts/task_levers_table.py: one row per completed run with the levers it varied and its accuracies;
a folder without runs is one line and exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import yaml

SCRIPT = Path(__file__).parents[2] / "scripts" / "task_levers_table.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def test_a_row_per_completed_run_with_its_levers_and_accuracies(tmp_path):
    for i, (alphabet, status) in enumerate([(64, "completed"), (8, "completed"), (16, "failed")]):
        d = tmp_path / f"run{i}"
        d.mkdir()
        model = {"name": "tiny", "d_model": 64, "n_layers": 2, "n_heads": 2, **({"init": "torch"} if i else {})}
        cfg = {"model": model, "encoding": {"name": "rope"},
               "seed": 0, "train": {"lr": 0.002},
               "task": {"name": "mqar", "alphabet": alphabet, "train_queries": "end", "curriculum": []}}
        (d / "config.yaml").write_text(yaml.safe_dump(cfg))
        (d / "metrics.json").write_text(json.dumps({
            "status": status, "train_steps": 3000, "final_val_loss": 0.9 + i, "train_wall_s": 80.0,
            "task_evaluations": [{"multiple": 1.0, "token_accuracy": 0.25 + i / 10},
                                 {"multiple": 2.0, "token_accuracy": None if i else 0.2}]}))  # None: not defined there
    proc = run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("| model | init | encoding | seed | alphabet | train_queries | curriculum | steps | lr |")
    assert "1x token acc. | 2x token acc." in lines[0] and len(lines) == 4  # header, rule, two completed runs
    assert "| tiny (d64, 2L, 2h) | torch | rope | 0 | 8 | end | - | 3000 | 0.002 | 1.900 | 0.350 | n/d | 80 |" in lines
    assert lines[2].startswith("| tiny (d64, 2L, 2h) | gpt2 | rope | 0 | 64 |")  # a config from before model.init: GPT-2's


def test_a_folder_without_runs_is_one_line(tmp_path):
    proc = run(tmp_path)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "no completed run" in proc.stderr
    proc = run(tmp_path / "missing")
    assert proc.returncode == 2 and "usage" in proc.stderr
