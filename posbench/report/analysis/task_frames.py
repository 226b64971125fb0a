"""Synthetic tasks and attention diagnostics in a report: does a model use far context?

Task records (``task_evaluations`` of task runs; posbench/tasks) give exact match and token
accuracy per variant, length and condition (passkey depth, MQAR pairs); ``accuracy`` below is the
task's own metric (passkey: exact match; MQAR and copy: token accuracy). Per task, variant, model
and train_len:

    accuracy at each multiple   mean over the grid's conditions, then over seeds, with a 95% interval
                                over examples and seeds (``task_interval``: t over seeds with the binomial spread of the examples)
    effective context length    the longest length up to which the mean accuracy over seeds stays at or
                                above the threshold (default 80%) in every condition of every length
                                (0 when it fails already at train_len)
    beyond training             mean accuracy over lengths longer than train_len (and conditions, seeds)
    chance                      the baseline: the best accuracy without retrieving (Task.chance: MQAR
                                1/n, the best without binding keys to values), mean over the grid:
                                what a model that has not learned the task scores

Only records on one example set per task are compared (the set with the most records), as the
perplexity tables compare one token set.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from posbench.core.errors import PosbenchError
from posbench.evaluation.diagnostics import uniform_entropy
from posbench.evaluation.variants import RANDPOS_SUFFIX
from posbench.report.analysis.bootstrap import seeds_and_text
from posbench.report.records.rows import remember_row
from posbench.spec import RunSpec, TaskSpec
from posbench.store.rundir import RUN_KEY
from posbench.tasks import TASKS

DEFAULT_THRESHOLD = 0.8
KEYS = ["task", "variant", "model", "train_len"]


def task_interval(g: pd.DataFrame) -> tuple[float, float]:
    """95% interval of one cell's accuracy (``g``: its records at one length: seed, condition,
    accuracy, examples) over examples and seeds, as the perplexity tables' intervals are over text
    and seeds (posbench/report/analysis/bootstrap.py): Student's t on the per-seed accuracies (each the mean
    over conditions) with the examples' binomial variance added and Welch-Satterthwaite degrees of
    freedom, clipped to [0, 1].

    The binomial variance of a condition is p~(1 - p~) / n with p~ = (right + 1) / (n + 2) (the
    Agresti-Coull-style shrinkage that keeps a cell of 0 or n right from claiming no spread). Every
    seed is scored on the same examples, so the examples' variance of the mean over seeds is taken as
    fully shared (the mean of the seeds' variances, not a 1/S of it). For token accuracy (MQAR, copy)
    the records treat each example as all right or all wrong, which overstates its spread: the
    interval is then conservative."""
    seeds = sorted(g["seed"].unique())
    conditions = sorted(g["condition"].fillna(-1).unique())
    p = np.full((len(seeds), len(conditions)), np.nan)
    n = np.zeros((len(seeds), len(conditions)), dtype=int)
    for r in g.itertuples():
        i, j = seeds.index(r.seed), conditions.index(-1 if pd.isna(r.condition) else r.condition)
        p[i, j], n[i, j] = r.accuracy, int(r.examples)
    if np.isnan(p).any() or (n <= 0).any():
        return np.nan, np.nan
    shrunk = (p * n + 1) / (n + 2)
    per_seed_var = (shrunk * (1 - shrunk) / n).sum(1) / len(conditions) ** 2  # of each seed's mean over conditions
    # every seed is scored on the same examples (tasks/score.py draws them from a fixed seed), so their
    # example noise may be shared: the bound for fully shared noise, not the 1/S of independent draws
    text_var = float(per_seed_var.mean())
    e = seeds_and_text(p.mean(1), text_var, float(n.sum(1).min()) - 1)
    return max(0.0, e.lo), min(1.0, e.hi)


def task_frame(runs: pd.DataFrame, configs: Mapping[str, DictConfig]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(records, left out): one row per task record of a completed run (``accuracy``: its task's
    metric), on its task's most common example set and at its row's largest budget; the records on
    other sets or of a smaller budget apart. ``configs``:
    the runs' configs by run directory (the task's parameters give its chance level and loss)."""
    frame = _records(runs, "task_evaluations")
    if frame.empty:
        return frame, frame
    metric = frame["task"].map(lambda t: getattr(TASKS.find(t), "metric", "exact"))
    frame["accuracy"] = [r[m] for (_, r), m in zip(frame.iterrows(), metric)]
    scored = set(frame["run_id"])
    run_task = {r.run_id: _task_of_run(configs[r.run_dir]) for r in runs.itertuples() if r.run_id in scored}
    frame["chance"] = [np.nan if run_task[rid] is None else run_task[rid].chance_at(None if pd.isna(c) else c, int(L))
                       for rid, c, L in zip(frame["run_id"], frame["condition"], frame["length"])]
    frame["loss"] = [None if run_task[rid] is None else run_task[rid].params.loss for rid in frame["run_id"]]
    main = frame.groupby("task")["example_set"].agg(lambda s: s.value_counts().index[0])
    keep = frame["example_set"] == frame["task"].map(main)
    # a row trained for several budgets (train.budgets: cool-down branches of one trunk, or runs of one seed at
    # other train.steps) is read at its largest, as the perplexity tables read theirs (sweep.largest_budget):
    # two budgets in one cell would be averaged as if they were one run. The rule reads the runs' steps only,
    # so a report rebuilt from its records (which name no trunk) reads the same cells
    keep &= largest_budget(frame, runs)
    return frame[keep].reset_index(drop=True), frame[~keep].reset_index(drop=True)


def largest_budget(frame: pd.DataFrame, runs: pd.DataFrame) -> pd.Series:
    """Per record of ``frame``: whether its run has its row's (task, variant, model, train_len) largest
    ``train_steps`` among the runs with records on the same example set; a run whose steps are unknown is kept."""
    steps = pd.to_numeric(frame["run_id"].map(runs.set_index("run_id")["train_steps"]) if "train_steps" in runs
                          else pd.Series(np.nan, index=frame.index), errors="coerce")
    most = steps.groupby([frame[k] for k in [*KEYS, "example_set"]], dropna=False).transform("max")
    return steps.isna() | ~(steps < most)


def _task_of_run(cfg: DictConfig):
    """The task (with the run's parameters) a run trained on; None when its config cannot say."""
    try:
        section = cfg.get("task")
        return TaskSpec.from_mapping(OmegaConf.to_container(section, resolve=True) if section is not None else None).build()
    except (ValueError, PosbenchError):
        return None


def per_seed(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per run and length, mean over the grid's conditions."""
    ok = frame[frame["accuracy"].notna()]
    return ok.groupby([*KEYS, "seed", "length", "multiple"], as_index=False)["accuracy"].mean()


def learned_floor(chance):
    """Halfway from chance to 100%: the accuracy a model at train_len must reach to count as having
    learned its task (a scalar or a column of chances)."""
    return (chance + 1) / 2


def scored_as_randomized(frame: pd.DataFrame) -> pd.Series:
    """The records of runs trained on random positions in their row scored as trained (``<encoding>+randpos``)."""
    return frame["variant"] == frame["encoding"] + RANDPOS_SUFFIX


def own_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Each run's records in the row scored as the run was trained: ``<encoding>+randpos`` for a run trained
    on randomized positions (Ruoss et al. 2023 score such a model on sampled positions; its plain row reads
    positions 0..L-1, which it never saw as one block, and a run that learned its task as trained can read
    chance there), the encoding's own row for every other run. An evaluation-time row of the same weights
    (+swaL, +logn, the plain row of a randomized run) inherits what this row learned. A run is its
    ``run_id`` where the frame has one (every frame of the report has), else its task, encoding, model,
    train_len and seed, which cannot tell a randomized run from a plain one of the same seed."""
    run = (frame["run_id"] if "run_id" in frame
           else frame[["task", "encoding", "model", "train_len", "seed"]].astype(str).agg("|".join, axis=1))
    randpos = scored_as_randomized(frame)
    trained_so = run.isin(set(run[randpos]))
    return frame[(randpos & trained_so) | ((frame["variant"] == frame["encoding"]) & ~trained_so)]


def not_learned(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs that had not learned their task at train_len: accuracy at 1x (mean over the grid's
    conditions, on the row scored as the run was trained: ``own_rows``) below halfway from chance to
    100%. Their accuracy beyond train_len says nothing about extrapolation. Columns: task, variant, model, train_len, seed, accuracy."""
    own = own_rows(frame)
    own = own[(own["multiple"] == 1) & own["accuracy"].notna()]
    if own.empty:
        return pd.DataFrame(columns=[*KEYS, "seed", "accuracy"])
    g = own.groupby([*KEYS, "seed"], as_index=False).agg(accuracy=("accuracy", "mean"), chance=("chance", "mean"))
    low = g[g["accuracy"] < learned_floor(g["chance"].fillna(0))]
    return low[[*KEYS, "seed", "accuracy"]].reset_index(drop=True)


LEARNED_SHARE = 0.9  # a task counts where some row reaches this share of its ceiling (100%) at train_len


def learned_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Which rows learned each task where they were trained, and whether the task counts. Per task and
    train_len, every model's own row (``own_rows``: the row scored as it was trained; an evaluation-time
    row of the same weights inherits what it learned) at 1x: the accuracy per run (mean over the grid's
    conditions), then the mean over seeds. A row *learned* the task where that mean reaches ``LEARNED_SHARE`` of the ceiling
    (100%); the task *counts* where some row learned it, since beyond train_len a task no row learned says
    nothing about extrapolation. The rows of every model meet here (a recurrent row, small_gdn, beside the
    attention rows of its size): a row is named with its model, ``nope (small_gdn)``, where the task and
    length have rows of several models. Columns: task, train_len, models, learned (the rows that did, best
    first), rows (how many rows were scored), best, best_accuracy, seeds (of the best row), counts."""
    own = own_rows(frame)
    own = own[own["multiple"] == 1]
    cols = ["task", "train_len", "models", "learned", "rows", "best", "best_accuracy", "seeds", "counts"]
    if own.empty or own["accuracy"].notna().sum() == 0:
        return pd.DataFrame(columns=cols)
    runs = per_seed(own)
    rows = runs.groupby(KEYS, as_index=False).agg(accuracy=("accuracy", "mean"), seeds=("seed", "nunique"))
    out = []
    for (task, train_len), g in rows.groupby(["task", "train_len"], sort=True):
        models = sorted(g["model"].unique())
        g = g.assign(row=g["variant"] if len(models) == 1 else g["variant"] + " (" + g["model"] + ")")
        g = g.sort_values(["accuracy", "row"], ascending=[False, True])
        learned = g[g["accuracy"] >= LEARNED_SHARE]
        best = g.iloc[0]
        out.append({"task": task, "train_len": int(train_len), "models": ", ".join(models), "learned": list(learned["row"]),
                    "rows": len(g), "best": best["row"], "best_accuracy": float(best["accuracy"]),
                    "seeds": int(best["seeds"]), "counts": not learned.empty})
    return pd.DataFrame(out, columns=cols)


def one_hop_reach(cfg: DictConfig) -> tuple[int, int] | None:
    """(W, layers) where every layer of a run's model attends within a window (the farthest key one
    layer reaches is W - 1 back; relaying through the layers reaches further), else None (some layer
    is global, or the config cannot say)."""
    try:
        spec = RunSpec.from_config(OmegaConf.to_container(cfg, resolve=True))
        enc = spec.encoding.build(spec.shape)
        windows = [enc.at(i).window(i) for i in range(spec.shape.n_layers)]
    except Exception:  # noqa: BLE001 - an older config this code cannot build says nothing here
        return None
    if not windows or any(w is None for w in windows):
        return None
    return max(w.size for w in windows), len(windows)


def window_reach(runs: pd.DataFrame, configs: Mapping[str, DictConfig]) -> list[dict]:
    """For each task run whose every layer is windowed: the task's conditions whose answer lies beyond
    one window at train_len (task.answer_distance): {task, encoding, model, train_len, window, layers,
    beyond: [(condition, distance)], within: [(condition, distance)]}, one per (task, encoding, model, train_len)."""
    out, seen = [], set()
    for r in runs.itertuples():
        cfg = configs.get(r.run_dir)
        task = _task_of_run(cfg) if cfg is not None else None
        if task is None or task.name == "lm":
            continue
        key = (task.name, r.encoding, r.model, int(r.train_len))
        if key in seen:
            continue
        seen.add(key)
        reach = one_hop_reach(cfg)
        if reach is None:
            continue
        window, layers = reach
        distances = [(c, task.answer_distance(int(r.train_len), c)) for c in task.conditions()]
        distances = [(c, d) for c, d in distances if d is not None]
        if distances:
            out.append({"task": task.name, "encoding": r.encoding, "model": r.model, "train_len": int(r.train_len),
                        "window": window, "layers": layers, "beyond": [(c, d) for c, d in distances if d > window - 1],
                        "within": [(c, d) for c, d in distances if d <= window - 1]})
    return out


def effective_length(cells: pd.DataFrame, threshold: float) -> int:
    """The longest length up to which every (length, condition) cell's accuracy is >= threshold;
    ``cells``: length, accuracy (one row per cell). 0 when the first length already fails."""
    if cells.empty:
        return 0
    return int(effective_lengths(cells["accuracy"].to_numpy(float), cells["length"].to_numpy(), threshold))


def effective_lengths(accuracy: np.ndarray, lengths: np.ndarray, threshold: float) -> np.ndarray:
    """``effective_length`` on each row of ``accuracy`` [..., C] at once (cells' ``lengths`` [C]): the
    longest length up to which every cell is >= threshold (0 where the shortest already fails); the
    measures section's bootstrap reads it for thousands of replicates."""
    order = np.unique(lengths)
    ok = np.stack([(accuracy[..., lengths == L] >= threshold).all(-1) for L in order], -1)  # [..., lengths]
    last = np.cumprod(ok, -1).sum(-1)  # how many lengths pass from the shortest on
    return np.where(last > 0, order[np.maximum(last - 1, 0)], 0).astype(float)


def task_table(frame: pd.DataFrame, threshold: float = DEFAULT_THRESHOLD) -> pd.DataFrame:
    """One row per task x variant x model x train_len: accuracy at each multiple (mean over seeds,
    ``_lo`` / ``_hi``: its 95% interval over examples and seeds), effective context length, mean
    accuracy beyond the training length, seeds."""
    seeds = per_seed(frame)
    scored = frame[frame["accuracy"].notna()]
    cells = frame[frame["accuracy"].notna()].groupby([*KEYS, "length", "condition"], dropna=False, as_index=False)[
        ["accuracy", "chance"]].mean()
    out = []
    for key, g in seeds.groupby(KEYS):
        row = dict(zip(KEYS, key))
        mine_records = scored[np.logical_and.reduce([scored[k] == v for k, v in zip(KEYS, key)])]
        for m, gm in g.groupby("multiple"):
            row[f"{m:g}x"] = gm["accuracy"].mean()
            row[f"{m:g}x_lo"], row[f"{m:g}x_hi"] = task_interval(mine_records[mine_records["multiple"] == m])
        beyond = g[g["length"] > row["train_len"]]
        row["beyond train_len"] = beyond["accuracy"].mean() if not beyond.empty else np.nan
        mine = cells[np.logical_and.reduce([cells[k] == v for k, v in zip(KEYS, key)])]
        row["effective length"] = effective_length(mine, threshold)
        row["chance"] = mine["chance"].mean()  # one value per cell of the grid
        row["seeds"] = g["seed"].nunique()
        out.append(row)
    table = pd.DataFrame(out)
    cols = sorted([c for c in table.columns if c.endswith("x")], key=lambda c: float(c[:-1]))
    ordered = [*KEYS, *[x for c in cols for x in (c, f"{c}_lo", f"{c}_hi")], "chance", "beyond train_len", "effective length",
               "seeds"]
    return table[ordered]


def display_task_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table as the report prints it: accuracy in % [95% interval over examples and seeds]."""
    cols = [c for c in table.columns if c.endswith("x")]
    shown = table[["task", "variant", "model", "train_len"]].copy()
    for c in cols:
        shown[c] = [("" if np.isnan(m) else f"{100 * m:.0f}" + ("" if np.isnan(lo) else f" [{100 * lo:.0f}, {100 * hi:.0f}]"))
                    for m, lo, hi in zip(table[c], table[f"{c}_lo"], table[f"{c}_hi"])]
    for c in ["chance", "beyond train_len"]:
        shown[c] = [f"{100 * v:.0f}" if not np.isnan(v) else "" for v in table[c]]
    shown["effective length"] = table["effective length"].astype(int)
    shown["seeds"] = table["seeds"]
    return shown


def heatmap_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean accuracy over seeds per task, variant, model, train_len, length and condition."""
    ok = frame[frame["accuracy"].notna()]
    return ok.groupby([*KEYS, "length", "condition"], dropna=False, as_index=False)["accuracy"].mean()


# -- attention diagnostics --------------------------------------------------------------------------

def attention_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run x length x layer x head of the runs' ``attention`` records."""
    return _records(runs, "attention")


def _records(runs: pd.DataFrame, column: str) -> pd.DataFrame:
    """The record lists in ``column`` of the runs (loaded by report/records/load.py), one row per record
    with the run's id, encoding, model, train_len and seed. A record's ``row`` (what the row is)
    goes to records/rows.py (what the row is, for its style), not into a column."""
    out = []
    for r in runs.itertuples():
        for rec in getattr(r, column) if isinstance(getattr(r, column), list) else []:
            rec = dict(rec)
            if "row" in rec:
                remember_row(str(rec.get("variant")), rec.pop("row"))
            out.append({**{k: getattr(r, k) for k in RUN_KEY}, **rec})
    return pd.DataFrame(out)


def attention_table(att: pd.DataFrame) -> pd.DataFrame:
    """Per source (text or task), encoding, model, train_len and length: mean attention distance and
    entropy over layers, heads and seeds, and the entropy of uniform attention at that length."""
    g = att.groupby(["source", "encoding", "model", "train_len", "length", "multiple"], as_index=False)[
        ["mean_distance", "entropy"]].mean()
    g["uniform entropy"] = g["length"].map(uniform_entropy)
    return g
