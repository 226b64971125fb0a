"""The learning rate of each encoding chosen on evidence: a one-seed grid's committed losses and
a second seed's runs at each encoding's two best rates, read together by the report's rule
(posbench/report/analysis/tuning.py ``decide``: the best rate only where it beats the others by 2 seed SDs of the
1x validation loss, else the common rate within that margin, else a tie: train both):

    python scripts/rate_choice.py results/budget_lr/tuning.csv /work/runs/budget_lr_seed1 [--seed0 0]

The first argument is a committed report's ``tuning.csv`` of a one-seed grid (its ``val_loss`` is that
seed's, ``--seed0`` names it); the second a folder of runs of the same grid at another seed (any subset
of its settings). Prints, per encoding, each rate's loss on both seeds, the pooled seed SD, the decision
and the rate it gives against the one-seed choice; then the verdict (16x/1x of the runs of the second
folder, one seed: intervals over the scored text) at each of the two best rates, and whether the rate
moves its class. Exit 1 with one line where the folders share no encoding.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from posbench.report.analysis.headline import with_interval
from posbench.report.records.load import load_runs
from posbench.report.analysis.tables import completed, main_table
from posbench.report.analysis.tuning import DEFAULT, GROUP, decide, run_settings_frame

TOLERANCE = 0.05


def second_seed(runs_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The second seed's completed runs (with their lr and lr_mult), their records and token sets."""
    loaded = load_runs(runs_dir)
    runs = loaded.runs[loaded.runs["status"] == "completed"]
    configs = {d: f.config for d, f in loaded.files.items()}
    runs = runs.merge(run_settings_frame(runs, configs), on="run_id")
    return runs, loaded.evals, loaded.token_sets


def per_seed_losses(grid: pd.DataFrame, runs: pd.DataFrame, seed0: int) -> pd.DataFrame:
    first = grid.assign(seed=seed0)[GROUP + ["lr", "lr_mult", "seed", "val_loss"]]
    second = runs.rename(columns={"final_val_loss": "val_loss"})[GROUP + ["lr", "lr_mult", "seed", "val_loss"]]
    return pd.concat([first, second[second["encoding"].isin(set(first["encoding"]))]], ignore_index=True)


def verdicts(runs: pd.DataFrame, evals: pd.DataFrame, token_sets: dict) -> dict[tuple, str]:
    """(encoding, lr) -> "ratio [interval] verdict" of the second seed's unwindowed row at that rate."""
    out = {}
    for lr, ids in runs.groupby("lr")["run_id"]:
        table = main_table(completed(evals[evals["run_id"].isin(set(ids))]), TOLERANCE, token_sets)
        ratio = next((c for c in table.columns if c.endswith("/1x")), None)
        if ratio is None:
            continue
        for _, r in table[~table["windowed"]].iterrows():
            out[(r["variant"], lr)] = (f"{with_interval(r[ratio], r[f'{ratio}_lo'], r[f'{ratio}_hi'])} "
                                       f"{r['verdict']}", str(r["verdict"]).split(",")[0])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tuning", type=Path, help="a committed report's tuning.csv (a one-seed grid)")
    parser.add_argument("runs_dir", type=Path, help="runs of the same grid at another seed")
    parser.add_argument("--seed0", type=int, default=0, help="the seed of the committed grid (default 0)")
    args = parser.parse_args(argv)
    grid = pd.read_csv(args.tuning)
    runs, evals, token_sets = second_seed(args.runs_dir)
    losses = per_seed_losses(grid, runs, args.seed0)
    if losses["seed"].nunique() < 2:
        print(f"rate_choice: no encoding of {args.tuning} has runs below {args.runs_dir}", file=sys.stderr)
        return 1
    decided = decide(losses, DEFAULT)
    before = grid[grid["chosen"].astype(bool)].set_index("encoding")["lr"]
    seen = verdicts(runs, evals, token_sets)
    print("| encoding | rate: val loss (seeds) | seed SD | decision | one-seed choice | choice | verdict at the "
          "two best rates (seed 1, 1200 steps) | the rate moves the class |")
    print("|---|---|---|---|---|---|---|---|")
    for enc, g in decided.groupby("encoding", sort=True):
        tried = g.sort_values("val_loss")
        cells = "; ".join(f"{r['lr']:g}: {r['val_loss']:.4f} ({int(r['seeds'])})" for _, r in tried.iterrows())
        chosen = g.loc[g["chosen"], "lr"].iloc[0]
        two = [lr for lr in tried["lr"] if (enc, lr) in seen][:2]
        shown = "; ".join(f"{lr:g}: {seen[(enc, lr)][0]}" for lr in two)
        classes = {seen[(enc, lr)][1] for lr in two}
        moves = "" if len(two) < 2 else ("yes" if len(classes) > 1 else "no")
        print(f"| `{enc}` | {cells} | {g['seed_sd'].iloc[0]:.4f} | {g['decision'].iloc[0]} | {before.get(enc, float('nan')):g} "
              f"| {chosen:g} | {shown} | {moves} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
