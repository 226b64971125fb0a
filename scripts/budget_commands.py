"""The budget study's commands, one per learning rate, from the learning-rate grid's report:

    python scripts/budget_commands.py results/budget_lr/tuning.csv [extra overrides ...]

Issue 36's protocol: each encoding's learning rate is chosen on 1x validation loss alone
(``experiment=budget_lr``: one seed, the middle budget) and used at every budget of
``experiment=budget``. ``tuning.csv`` is what posbench-report writes for a learning-rate grid (the
``chosen`` row of each encoding). Prints one ``posbench-train -m experiment=budget`` line per
chosen learning rate, with the encodings that chose it; refuses (exit 1, one line) where a choice
lies at the edge of the grid (its best may lie outside: extend the grid first) or an encoding of the
preset has no choice.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pandas as pd
import yaml

PRESET = Path(__file__).resolve().parents[1] / "posbench" / "conf" / "experiment" / "budget.yaml"


def preset_encodings() -> list[str]:
    sweep = yaml.safe_load(PRESET.read_text())["hydra"]["sweeper"]["params"]
    return [e.strip() for e in str(sweep["encoding"]).split(",")]


def commands(tuning: pd.DataFrame, extra: list[str]) -> list[str]:
    """One command per chosen learning rate (SystemExit with one line where the choice cannot be used)."""
    if tuning[["model", "train_len"]].drop_duplicates().shape[0] > 1 or (tuning["lr_mult"] != 1).any():
        sys.exit("budget_commands: the grid varies more than train.lr (models, train_len or encoding.lr_mult); "
                 "experiment=budget_lr varies the learning rate only")
    chosen = tuning[tuning["chosen"].astype(bool)]
    for encoding, g in tuning.groupby("encoding"):
        tried, pick = sorted(set(g["lr"])), g.loc[g["chosen"].astype(bool), "lr"]
        if pick.empty:
            sys.exit(f"budget_commands: {encoding} has no chosen learning rate in the grid")
        if len(tried) < 3:
            sys.exit(f"budget_commands: {encoding} was tried at {len(tried)} learning rates; a grid brackets a choice "
                     "with 3 or more")
        if pick.iloc[0] in (tried[0], tried[-1]):
            sys.exit(f"budget_commands: {encoding} chose lr {pick.iloc[0]:g}, the edge of the grid {tried}: "
                     "its best may lie outside; extend the grid (train.lr) first")
    if missing := sorted(set(preset_encodings()) - set(chosen["encoding"])):
        sys.exit(f"budget_commands: no learning rate chosen for {', '.join(missing)} (the grid's report lacks them)")
    out = []
    for lr, g in chosen[chosen["encoding"].isin(preset_encodings())].groupby("lr"):
        encodings = ",".join(e for e in preset_encodings() if e in set(g["encoding"]))  # the preset's order
        out.append(" ".join(["posbench-train -m experiment=budget", f"encoding={encodings}", f"train.lr={lr:g}",
                             *map(shlex.quote, extra)]))
    return out


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__.strip())
    path = Path(argv[0])
    if not path.is_file():
        sys.exit(f"budget_commands: {path} does not exist; give the learning-rate grid report's tuning.csv")
    print("\n".join(commands(pd.read_csv(path), argv[1:])))


if __name__ == "__main__":
    main(sys.argv[1:])
