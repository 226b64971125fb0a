"""scripts/schedule_comparison.py: cosine against WSD at one budget, from a report of cosine runs and a
budget sweep's report: each row both hold, side by side, and whether the 1x intervals separate them;
folders without that budget are refused in one line."""

import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).parents[2]


def row(variant, one, ratio, windowed=False, **extra):
    return {"protocol": "nonoverlapping", "variant": variant, "model": "small", "train_len": 64, "seeds": 3,
            "windowed": windowed, "1x": one, "1x_lo": one * 0.95, "1x_hi": one * 1.05, "16x/1x": ratio,
            "16x/1x_lo": ratio * 0.9, "16x/1x_hi": ratio * 1.1, "verdict": "flat" if ratio < 1.05 else "broken", **extra}


def folders(tmp_path, steps=1200):
    cosine, budget = tmp_path / "cosine", tmp_path / "budget"
    cosine.mkdir(), budget.mkdir()
    pd.DataFrame([row("rope", 6.0, 2.0), row("alibi", 6.0, 1.0), row("alibi+swaL", 6.0, 1.0, windowed=True),
                  row("nope", 8.0, 1.5)]).to_csv(cosine / "table.csv", index=False)
    pd.DataFrame({"run_id": ["a", "b"], "steps": [steps, steps]}).to_csv(cosine / "convergence.csv", index=False)
    pd.DataFrame([row("rope", 6.1, 2.2, budget_steps=1200), row("alibi", 7.0, 1.0, budget_steps=1200),
                  row("alibi", 5.0, 1.0, budget_steps=2400)]).to_csv(budget / "budgets.csv", index=False)
    return cosine, budget


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "schedule_comparison.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_each_row_both_reports_hold_side_by_side_at_the_budget(tmp_path):
    proc = run(*folders(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "row" not in line]
    assert [line.split("|")[1].strip() for line in lines] == ["rope", "alibi"]  # no control, no row one lacks
    rope, alibi = lines
    assert "6.00 [5.70, 6.30]" in rope and "6.10 [5.79, 6.41]" in rope and "2.20 [1.98, 2.42] broken" in rope
    assert rope.rstrip(" |").endswith("overlap") and alibi.rstrip(" |").endswith("cosine lower")  # 6.0 [5.7, 6.3] vs 7.0 [6.65, 7.35]


def test_folders_without_the_budget_are_refused_in_one_line(tmp_path):
    cosine, budget = folders(tmp_path, steps=600)
    proc = run(cosine, budget)
    assert proc.returncode == 1 and proc.stderr.strip().splitlines() == [
        f"schedule_comparison: {cosine} holds runs of [600] steps, not only 1200"]
    proc = run(cosine, budget, "--steps", "600")
    assert proc.returncode == 1 and "has no budget of 600 steps; it has [1200, 2400]" in proc.stderr
