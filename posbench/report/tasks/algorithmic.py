"""The algorithmic suite in a report, grouped by the Chomsky hierarchy (Deletang et al. 2023, arXiv
2207.02098, Table 1; Ruoss et al. 2023, arXiv 2305.16843, Table 1): per task x variant x model x
train_len, the accuracy at 1x and beyond the training range, by level (regular, context-free,
context-sensitive; ``Task.level``, posbench/tasks/algorithmic.py and flip_flop.py).

Ruoss et al.'s score is the per-token accuracy (their ``accuracy_fn``: the fraction of output tokens
right) at each test length, averaged uniformly over the lengths beyond training (N + 1 .. M;
randomized_positional_encodings ``experiments/range_evaluation.py`` scores every length). Here each
evaluation window of L tokens scores a band of input lengths (AlgorithmicTask.band: max_input(L/2) + 1
.. max_input(L)), so the uniform average over lengths is the mean of the windows beyond 1x weighted by
how many input lengths each band holds::

    beyond = sum_{L > train_len} w(L) acc(L) / sum w(L),   w(L) = max_input(L) - max_input(L / 2)

(flip-flop, whose windows are its sequences: w(L) = L - L / 2). Per seed, then the mean over seeds with
the task table's 95% interval over examples and seeds (tasks.task_interval, reused on the per-seed
scores with the examples beyond 1x). ``exact beyond``: the same average of exact match.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from posbench.report.analysis.task_frames import KEYS, task_interval
from posbench.tasks import TASKS, build_task

LEVELS = ("regular", "context-free", "context-sensitive")


def level_of(task: str) -> str | None:
    """The Chomsky-hierarchy level of a task (None: not an algorithmic task, or not installed here)."""
    return getattr(TASKS.find(task), "level", None)


def band_width(task: str, length: int) -> int:
    """How many test lengths an evaluation window of ``length`` tokens stands for."""
    t = build_task(task)
    if hasattr(t, "band"):
        lo, hi = t.band(length)
        return max(0, hi - lo)
    return length - length // 2


def algorithmic_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The task records of the algorithmic tasks, with their level and band weight."""
    if frame.empty:
        return frame
    levels = frame["task"].map(level_of)
    out = frame[levels.notna()].copy()
    out["level"] = levels[levels.notna()]
    out["weight"] = [band_width(t, int(L)) for t, L in zip(out["task"], out["length"])]
    return out[out["accuracy"].notna()]


def algorithmic_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per level x task x variant x model x train_len: chance, the 1x accuracy, the score beyond
    training (Ruoss et al.'s, with its interval), exact match beyond, seeds. ``frame``: algorithmic_frame."""
    rows = []
    for key, g in frame.groupby(KEYS):
        cells = g.groupby(["seed", "length", "multiple", "weight"], as_index=False).agg(
            accuracy=("token_accuracy", "mean"), exact=("exact", "mean"), examples=("examples", "sum"), chance=("chance", "mean"))
        at1 = cells[cells["multiple"] == 1]
        beyond = cells[cells["multiple"] > 1]
        row = {"level": g["level"].iloc[0], **dict(zip(KEYS, key)), "chance": cells["chance"].mean(),
               "1x": at1["accuracy"].mean() if not at1.empty else np.nan}
        if beyond.empty:
            row.update({"beyond": np.nan, "beyond_lo": np.nan, "beyond_hi": np.nan, "exact beyond": np.nan})
        else:
            per_seed = beyond.groupby("seed").apply(lambda s: pd.Series({
                "accuracy": np.average(s["accuracy"], weights=s["weight"]),
                "exact": np.average(s["exact"], weights=s["weight"]), "examples": s["examples"].sum()}),
                include_groups=False).reset_index()
            per_seed["condition"] = np.nan
            lo, hi = task_interval(per_seed)
            row.update({"beyond": per_seed["accuracy"].mean(), "beyond_lo": lo, "beyond_hi": hi,
                        "exact beyond": per_seed["exact"].mean()})
        row["seeds"] = g["seed"].nunique()
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["order"] = table["level"].map(LEVELS.index)
    return table.sort_values(["order", "task", "variant"]).drop(columns="order").reset_index(drop=True)


def level_means(table: pd.DataFrame) -> pd.DataFrame:
    """Per level x variant x model x train_len: the mean over the level's tasks of the score beyond training
    (Ruoss et al. average a level's tasks the same way), and how many tasks it holds."""
    g = table.groupby(["level", "variant", "model", "train_len"], as_index=False).agg(
        beyond=("beyond", "mean"), tasks=("task", "nunique"))
    g["order"] = g["level"].map(LEVELS.index)
    return g.sort_values(["order", "variant"]).drop(columns="order").reset_index(drop=True)


def display_algorithmic_table(table: pd.DataFrame) -> pd.DataFrame:
    """As the report prints it: accuracy in % [95% interval over examples and seeds]."""
    shown = table[["level", *KEYS]].copy()

    def pct(v):
        return "" if np.isnan(v) else f"{100 * v:.0f}"

    shown["chance"] = table["chance"].map(pct)
    shown["1x"] = table["1x"].map(pct)
    shown["beyond train_len (Ruoss et al.)"] = [pct(m) + ("" if np.isnan(lo) else f" [{pct(lo)}, {pct(hi)}]")
                                                for m, lo, hi in zip(table["beyond"], table["beyond_lo"], table["beyond_hi"])]
    shown["exact beyond"] = table["exact beyond"].map(pct)
    shown["seeds"] = table["seeds"]
    return shown
