"""Learning-rate tuning in a report: when the runs of an encoding were trained at several
learning rates (``experiment=lr_grid``: ``train.lr`` x ``encoding.lr_mult``), the main table keeps
the default setting (one learning rate for every encoding), and a second table shows each
encoding at the setting chosen for it on 1x validation loss alone (mean over seeds of the final
validation loss at train_len; never on extrapolation), with the chosen values beside it.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd
from omegaconf import DictConfig

from posbench.training.trainer import TrainConfig

DEFAULT = (TrainConfig().lr, 1.0)  # (train.lr, encoding.lr_mult) of a run with no overrides
GROUP = ["encoding", "model", "train_len"]


def run_settings(runs: pd.DataFrame, configs: Mapping[str, DictConfig]) -> pd.DataFrame:
    """run_id, lr, lr_mult of every run (from its config, ``configs`` by run directory)."""
    rows = []
    for rid, d in zip(runs["run_id"], runs["run_dir"]):
        cfg = configs[d]
        rows.append({"run_id": rid, "lr": float(cfg.train.lr), "lr_mult": float(cfg.encoding.get("lr_mult", 1.0))})
    return pd.DataFrame(rows, columns=["run_id", "lr", "lr_mult"])


def choose_settings(runs: pd.DataFrame, configs: Mapping[str, DictConfig]) -> pd.DataFrame | None:
    """Per (encoding, model, train_len): every setting's mean 1x validation loss and the chosen one
    (lowest); None when every run shares one setting (nothing was tuned)."""
    done = runs[runs["status"] == "completed"]
    done = done.merge(run_settings(done, configs), on="run_id")
    if done.empty or len(done[["lr", "lr_mult"]].drop_duplicates()) < 2:
        return None
    per = done.groupby(GROUP + ["lr", "lr_mult"]).agg(val_loss=("final_val_loss", "mean"), seeds=("seed", "nunique")).reset_index()
    if per.groupby(GROUP).size().max() < 2:
        return None  # each configuration at one setting (e.g. each encoding at its chosen rate): nothing was tuned here
    best = per.loc[per.groupby(GROUP)["val_loss"].idxmin()]
    per = per.merge(best[GROUP + ["lr", "lr_mult"]].assign(chosen=True), on=GROUP + ["lr", "lr_mult"], how="left")
    return per.fillna({"chosen": False})


def split_runs(runs: pd.DataFrame, choices: pd.DataFrame, configs: Mapping[str, DictConfig]) -> tuple[set, set]:
    """(run ids at the default setting, run ids at each encoding's chosen setting)."""
    settings = runs.merge(run_settings(runs, configs), on="run_id")
    default = settings[(settings["lr"] == DEFAULT[0]) & (settings["lr_mult"] == DEFAULT[1])]
    chosen = settings.merge(choices[choices["chosen"]][GROUP + ["lr", "lr_mult"]], on=GROUP + ["lr", "lr_mult"])
    return set(default["run_id"]), set(chosen["run_id"])


def grid_edge_warning(choices: pd.DataFrame) -> str | None:
    """A sentence naming the encodings whose chosen value lies at the edge of a grid of three or
    more values (their best may lie outside it), or None. With two values every choice is an edge,
    so those grids are not flagged."""
    parts = []
    for column, label in (("lr", "learning rate"), ("lr_mult", "lr_mult")):
        for edge, word in ((max, "highest"), (min, "lowest")):
            names = []
            for key, group in choices.groupby(GROUP):
                tried = sorted(set(group[column]))
                chosen = group.loc[group["chosen"].astype(bool), column]
                if len(tried) > 2 and not chosen.empty and chosen.iloc[0] == edge(tried):
                    names.append(f"`{key[0]}`")
            if names:
                parts.append(f"{len(names)} of {choices.groupby(GROUP).ngroups} chose the {word} {label} tried "
                             f"({', '.join(names)})")
    if not parts:
        return None
    return ("**At the edge of the grid:** " + "; ".join(parts) + ". Their best setting may lie outside the grid: "
            "extend it before reading the tuned table as tuned.")
