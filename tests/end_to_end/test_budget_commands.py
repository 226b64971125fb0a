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


def map_tuning(tmp_path, model, picks, seeds=2, grid=(2e-3, 4e-3, 8e-3, 1.6e-2)) -> Path:
    rows = [{"encoding": e, "model": model, "train_len": 64, "lr": lr, "lr_mult": 1.0, "val_loss": 1.0, "seeds": seeds,
             "chosen": lr == pick} for e, pick in picks.items() for lr in grid]
    path = tmp_path / f"tuning_{model}.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_the_map_s_commands_are_lines_through_the_centre_at_fixed_tokens_per_step(tmp_path):
    """experiment=map: the centre model at every length with batch = 2048 / length, on each corpus, and
    every grid model at the centre length with its own rates (base at 2 seeds)."""
    from budget_commands import map_encodings

    encodings = map_encodings()
    grid = map_tuning(tmp_path, "tiny", {e: (4e-3 if e == "nope" else 8e-3) for e in encodings})
    small = "small:" + ",".join(f"{e}={2e-3 if i % 2 else 4e-3:g}" for i, e in enumerate(encodings))
    base = "base:" + ",".join(f"{e}=0.001" for e in encodings)
    proc = run("--map", grid, "--rates", small, "--rates", base, "runs_dir=/tmp/map")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2 * 5 + 2 + 1  # small: 4 lengths + pydocs, 2 rates each; tiny 2 rates; base 1
    for n, batch in ((32, 64), (64, 32), (128, 16), (256, 8)):
        assert sum(f"model=small train_len={n} train.batch_size={batch}" in x for x in lines) == (4 if n == 64 else 2)
    assert sum("data=pydocs" in x for x in lines) == 2
    assert [x for x in lines if "model=base" in x][0].endswith("seed=0,1 runs_dir=/tmp/map")
    assert any("encoding=nope train.lr=0.004 model=tiny train_len=64" in x for x in lines)
    assert all(x.startswith("posbench-train -m experiment=map encoding=") for x in lines)


def test_the_map_refuses_a_rate_on_one_seed_or_a_missing_one(tmp_path):
    from budget_commands import map_encodings

    encodings = map_encodings()
    small = "small:" + ",".join(f"{e}=0.002" for e in encodings)
    one_seed = run("--map", map_tuning(tmp_path, "tiny", {e: 4e-3 for e in encodings}, seeds=1), "--rates", small)
    assert one_seed.returncode == 1 and "on 1 seed" in one_seed.stderr
    missing = run("--map", "--rates", "small:nope=0.002")
    assert missing.returncode == 1 and "no learning rate for rope" in missing.stderr


def test_a_choice_on_the_grid_s_edge_extends_the_grid_one_step_out_and_none_else(tmp_path):
    """--edges: the map's base grid (1e-3, 2e-3, 4e-3) is extended where its choice lies on an edge, so
    that --map, which refuses such a choice, can run after it (scripts/map_study.sh base_edges)."""
    from budget_commands import map_encodings

    encodings = map_encodings()
    picks = {e: {"nope": 1e-3, "rope": 1e-3, "alibi": 4e-3}.get(e, 2e-3) for e in encodings}
    proc = run("--edges", map_tuning(tmp_path, "base", picks, grid=(1e-3, 2e-3, 4e-3)), "train.budgets=[300]")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines() == [
        "posbench-train -m experiment=map_lr model=base encoding=nope,rope train.lr=0.0005 'train.budgets=[300]'",
        "posbench-train -m experiment=map_lr model=base encoding=alibi train.lr=0.008 'train.budgets=[300]'"]
    inside = run("--edges", map_tuning(tmp_path, "base", {e: 2e-3 for e in encodings}, grid=(1e-3, 2e-3, 4e-3)))
    assert inside.returncode == 0 and inside.stdout == ""


def test_a_tie_trains_its_second_rate_and_nothing_else(tmp_path):
    """--ties: where the grid's choice is a tie of two rates, neither the common one ("train both"), the
    map trains the best and this line the runner-up (scripts/map_study.sh tiny_tied); a choice by a margin
    or by the common rate adds nothing."""
    rows = []
    for encoding, losses, decision in [
            ("nope", {8e-3: 1.00, 1.6e-2: 1.01, 4e-3: 1.02, 2e-3: 1.1}, "tied: lr 0.008 and 0.016 within 2 seed SDs, "
                                                                       "neither the common setting: train both"),
            ("fox", {4e-3: 1.00, 8e-3: 1.01, 2e-3: 1.05, 1.6e-2: 1.2}, "tied: lr 0.004 and 0.008 within 2 seed SDs, "
                                                                      "neither the common setting: train both"),
            ("alibi", {8e-3: 1.00, 1.6e-2: 1.3, 4e-3: 1.4, 2e-3: 1.5}, "best by 18.2 seed SDs (>= 2)")]:
        best = min(losses, key=losses.get)
        rows += [{"encoding": encoding, "model": "tiny", "train_len": 64, "lr": lr, "lr_mult": 1.0, "val_loss": loss,
                  "seeds": 2, "chosen": lr == best, "decision": decision} for lr, loss in losses.items()]
    path = tmp_path / "tuning.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    proc = run("--ties", path, "runs_dir=/tmp/tied")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines() == [
        "posbench-train -m experiment=map encoding=fox train.lr=0.008 model=tiny train_len=64 train.batch_size=32 "
        "runs_dir=/tmp/tied",
        "posbench-train -m experiment=map encoding=nope train.lr=0.016 model=tiny train_len=64 train.batch_size=32 "
        "runs_dir=/tmp/tied"]
    assert run("--ties", path, "--length", "48").returncode == 1
