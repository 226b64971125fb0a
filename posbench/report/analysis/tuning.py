"""Learning-rate tuning in a report: when the runs of an encoding were trained at several
learning rates (``experiment=lr_grid``: ``train.lr`` x ``encoding.lr_mult``), the main table keeps
the default setting (one learning rate for every encoding), and a second table shows each
encoding at the setting chosen for it on 1x validation loss alone (mean over seeds of the final
validation loss at train_len; never on extrapolation), with the chosen values beside it.

The choice is made on evidence (``decide``): the rate moves verdicts (T5's 16x/1x at
1200 steps, seed 0: 2.64 at 2e-3, 2.03 at 4e-3), and on one seed most grids' margins were inside
the seeds' spread. A grid is read on at least two seeds (``MIN_SEEDS``); the best setting is
chosen only where it beats the others by at least ``MARGIN_SDS`` seed standard deviations (of the
final validation loss: the root of the median of the settings' within-setting variances; the median,
so that one setting whose seeds disagree, e.g. a seed that did not train at the grid's highest rate,
cannot widen the margin for every other setting: the map's tiny grid had T5's SD 0.22 with the mean,
0.003 to 0.022 within each other setting); else the common setting (the house
default, one rate for every encoding) wins where it is within that margin of the best, and
otherwise the best and the runner-up are tied (both should be trained; the choice says so). On one
seed the grid's best is kept and marked as not read on evidence.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from posbench.training.trainer import TrainConfig

DEFAULT = (TrainConfig().lr, 1.0)  # (train.lr, encoding.lr_mult) of a run with no overrides
GROUP = ["encoding", "model", "train_len"]


def run_settings_frame(runs: pd.DataFrame, configs: Mapping[str, DictConfig]) -> pd.DataFrame:
    """run_id, lr, lr_mult of every run (from its config, ``configs`` by run directory)."""
    rows = []
    for rid, d in zip(runs["run_id"], runs["run_dir"]):
        cfg = configs[d]
        rows.append({"run_id": rid, "lr": float(cfg.train.lr), "lr_mult": float(cfg.encoding.get("lr_mult", 1.0))})
    return pd.DataFrame(rows, columns=["run_id", "lr", "lr_mult"])


MIN_SEEDS = 2  # a grid read on fewer seeds chooses nothing on evidence
MARGIN_SDS = 2.0  # the best must beat a setting by this many seed SDs of the 1x validation loss to be chosen over it


def decide(per_seed: pd.DataFrame, common: tuple[float, float] = DEFAULT) -> pd.DataFrame:
    """``per_seed``: GROUP + lr, lr_mult, seed, val_loss (one row per run). Per configuration and
    setting: mean ``val_loss``, ``seeds``, the configuration's pooled ``seed_sd``, the setting's
    ``margin`` over the best (in seed SDs), ``chosen`` and the configuration's ``decision`` (module doc).
    ``seed_sd`` is the root of the median of the settings' seed variances (with two settings, their mean)."""
    per = per_seed.groupby(GROUP + ["lr", "lr_mult"]).agg(val_loss=("val_loss", "mean"), seeds=("seed", "nunique"),
                                                         var=("val_loss", "var")).reset_index()
    out = []
    for _, g in per.groupby(GROUP, sort=True):
        g = g.sort_values("val_loss").copy()
        spread = g.loc[g["seeds"] >= 2, "var"]
        sd = float(np.sqrt(spread.median())) if len(spread) else math.nan  # median: one unstable setting is no yardstick
        best = g.iloc[0]
        g["seed_sd"] = sd
        g["margin"] = (g["val_loss"] - best["val_loss"]) / sd if sd > 0 else math.nan
        is_common = (g["lr"] == common[0]) & (g["lr_mult"] == common[1])
        close = g[(g["margin"] < MARGIN_SDS)] if sd > 0 else g.iloc[:1]
        if len(g) < 2:
            chosen, decision = g.index[0], "one setting"
        elif int(best["seeds"]) < MIN_SEEDS or not sd > 0:
            chosen, decision = g.index[0], f"the grid's best on {int(best['seeds'])} seed: not read on evidence"
        elif len(close) == 1:
            chosen, decision = g.index[0], f"best by {g['margin'].iloc[1]:.1f} seed SDs (>= {MARGIN_SDS:g})"
        elif is_common[close.index].any():
            chosen = close.index[is_common[close.index]][0]
            decision = (f"within {MARGIN_SDS:g} seed SDs of the best: the common setting"
                        + ("" if chosen == g.index[0] else f" (the best, lr {best['lr']:g}, by {g.loc[chosen, 'margin']:.1f} SDs)"))
        else:
            runner = close.iloc[1]
            chosen = g.index[0]
            decision = (f"tied: lr {best['lr']:g} and {runner['lr']:g} within {MARGIN_SDS:g} seed SDs, neither the common "
                        "setting: train both")
        g["chosen"] = g.index == chosen
        g["decision"] = decision
        out.append(g.drop(columns="var"))
    return pd.concat(out, ignore_index=True)


def choose_settings(runs: pd.DataFrame, configs: Mapping[str, DictConfig]) -> pd.DataFrame | None:
    """Per (encoding, model, train_len): every setting's mean 1x validation loss and the chosen one
    (``decide``); None when every run shares one setting (nothing was tuned)."""
    done = runs[runs["status"] == "completed"]
    done = done.merge(run_settings_frame(done, configs), on="run_id")
    if done.empty or len(done[["lr", "lr_mult"]].drop_duplicates()) < 2:
        return None
    if done.groupby(GROUP)[["lr", "lr_mult"]].apply(lambda g: len(g.drop_duplicates())).max() < 2:
        return None  # each configuration at one setting (e.g. each encoding at its chosen rate): nothing was tuned here
    return decide(done.rename(columns={"final_val_loss": "val_loss"})[GROUP + ["lr", "lr_mult", "seed", "val_loss"]])


def split_runs(runs: pd.DataFrame, choices: pd.DataFrame, configs: Mapping[str, DictConfig]) -> tuple[set, set]:
    """(run ids at the default setting, run ids at each encoding's chosen setting)."""
    settings = runs.merge(run_settings_frame(runs, configs), on="run_id")
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
