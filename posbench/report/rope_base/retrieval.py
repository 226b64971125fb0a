"""Men et al.'s bound where it speaks: retrieval. Men et al. 2024 (arXiv 2405.14591, Sections 3 and 5.4)
say a RoPE base supports retrieval only up to L_theta tokens (Eq. 10, posbench/report/rope_base/theory.py
``men_supported_length``): past it a model can keep a low perplexity ("superficial" long-context ability)
while it cannot retrieve what lies further back. Passkey runs trained at several RoPE bases test that
directly: every cell of the passkey grid (evaluation length x needle depth) has a distance from the
question back to the needle (``Passkey.answer_distance``), so each cell is either within the base's bound
or beyond it.

Per (RoPE base, train_len) and cell: the distance, within or beyond the bound, and the exact match, mean
over seeds with its 95% interval over examples and seeds (task_frames.task_interval). The bound is a claim
about every model of that base, so the unit of evidence is one model: a seed *retrieves* a cell where its
own interval over the cell's examples lies above the floor (halfway from chance to 100%, the bar below
which the report calls a run not learned), *fails* it where the interval lies below. A row's word rests on
whichever of its per-seed tests comes out (any of them can), so each seed's interval, Clopper-Pearson's
exact one for its binomial count, is Bonferroni-corrected over the row's tests (its cells x seeds): level
1 - 0.05 / m in place of 95%, so that the retrieves and fails a row's word rests on are all right with
probability at least 95% however many cells it has. The price is power: the more cells, the more a seed
must retrieve to count, so a retrieval beyond the bound can be missed and the word read consistent or
cannot be told where a test of one cell would have said contradicted. Men et al.'s bound is a necessary condition: a
cell beyond it that a seed retrieves contradicts it; a cell within it that fails says nothing (a model
broken past train_len fails there for another reason). Per row one word: **contradicted** (some seed
retrieves a cell beyond the bound); **consistent** (none does, and a seed that retrieves a cell within the
bound at train_len fails one beyond it at train_len: the "superficial" case, where the model is not broken
and only the distance differs); **cannot be told** otherwise (no cell beyond the bound at train_len, or no
seed that learned the task there).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Mapping

import pandas as pd
from omegaconf import DictConfig, OmegaConf
from scipy import stats

from posbench.report.analysis.stats import ALPHA
from posbench.report.analysis.task_frames import learned_floor, own_rows, task_interval
from posbench.report.records.load import base_of
from posbench.report.rope_base.theory import head_dim_of, men_supported_length
from posbench.spec import TaskSpec

TASK = "passkey"
CONTRADICTED, CONSISTENT, UNTOLD = "contradicted", "consistent", "cannot be told"


def passkey_cells(records: pd.DataFrame, configs: Mapping[str, DictConfig], runs: pd.DataFrame) -> pd.DataFrame:
    """One row per passkey cell of the runs trained at a named RoPE base (each run's own row,
    task_frames.own_rows): model, rope_base, train_len, multiple, length, depth, distance, bound (Men et
    al.'s L_theta in tokens, searched up to 64 x train_len: ``bound_capped`` where none was found below
    that), beyond, accuracy (mean over seeds), lo, hi (95% over examples and seeds), seeds, floor,
    retrieved_by and failed_by (the seeds whose own exact interval, Bonferroni-corrected over the row's
    cells x seeds, lies above or below the floor), tests (that m). Empty without such runs."""
    if records.empty or "task" not in records:
        return pd.DataFrame()
    own = own_rows(records[records["task"] == TASK])
    own = own[own["encoding"] == "rope"]
    own = own[own["model"].map(lambda m: base_of(m)[1] is not None) & own["accuracy"].notna()]
    if own.empty:
        return pd.DataFrame()
    tasks, d_head = _tasks_and_heads(own, configs, runs)
    cells = list(own.groupby(["model", "train_len", "multiple", "length", "condition"]))
    tests = Counter()  # the per-seed tests of a row (model label, train_len): one per cell and seed
    for (label, train_len, *_), g in cells:
        tests[(label, train_len)] += g["seed"].nunique()
    rows = []
    for (label, train_len, multiple, length, depth), g in cells:
        base, task = base_of(label)[1], tasks[label]
        floor = learned_floor(task.chance(depth))
        cell = g[["seed", "condition", "accuracy", "examples"]]
        lo, hi = task_interval(cell)
        m = tests[(label, train_len)]
        by_seed = {seed: exact_interval(one, ALPHA / m) for seed, one in cell.groupby("seed")}
        rows.append({"model": base_of(label)[0], "rope_base": base, "train_len": int(train_len), "multiple": float(multiple),
                     "length": int(length), "depth": float(depth), "distance": task.answer_distance(int(length), float(depth)),
                     "bound": men_supported_length(d_head[label], base, max_len=64 * int(train_len)),
                     "cap": 64 * int(train_len),  # no violation found up to it: the true bound may be larger
                     "accuracy": g.groupby("seed")["accuracy"].mean().mean(), "lo": lo, "hi": hi,
                     "seeds": g["seed"].nunique(), "floor": floor, "tests": m,
                     "retrieved_by": sorted(int(s) for s, (s_lo, _) in by_seed.items() if s_lo > floor),
                     "failed_by": sorted(int(s) for s, (_, s_hi) in by_seed.items() if s_hi < floor)})
    cells = pd.DataFrame(rows)
    cells["beyond"] = cells["distance"] > cells["bound"]  # a capped bound exceeds every distance scored (16x < 64x)
    cells["bound_capped"] = cells["bound"] >= cells.pop("cap")
    return cells.sort_values(["train_len", "rope_base", "multiple", "depth"], kind="stable").reset_index(drop=True)


def exact_interval(records: pd.DataFrame, alpha: float) -> tuple[float, float]:
    """Clopper-Pearson's exact interval at level 1 - ``alpha`` of one seed's exact match in one cell
    (``records``: its accuracy and examples; the right answers summed where it has several): the test of
    one model on one cell's examples is a binomial count, so its error rate holds at any alpha, where a
    normal approximation's tail is off at the small alphas of a correction (scipy.stats.binomtest)."""
    right = int(round(float((records["accuracy"] * records["examples"]).sum())))
    ci = stats.binomtest(right, int(records["examples"].sum())).proportion_ci(1 - alpha, method="exact")
    return float(ci.low), float(ci.high)


def verdicts(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (model, rope_base, train_len): the bound, the cells beyond it, those some seed retrieves (and the
    farthest such distance), the seeds that learned the task within the bound at train_len and, of them,
    those that fail a cell beyond it there, and the word (the module doc)."""
    rows = []
    for (model, base, train_len), g in cells.groupby(["model", "rope_base", "train_len"], sort=True):
        beyond, at_1x = g[g["beyond"]], g[g["multiple"] == 1.0]
        found = beyond[beyond["retrieved_by"].map(len) > 0]
        learned = sorted({s for seeds in at_1x[~at_1x["beyond"]]["retrieved_by"] for s in seeds})
        superficial = sorted({s for seeds in at_1x[at_1x["beyond"]]["failed_by"] for s in seeds} & set(learned))
        word = CONTRADICTED if not found.empty else CONSISTENT if superficial else UNTOLD
        rows.append({"model": model, "rope_base": base, "train_len": int(train_len), "bound": int(g["bound"].iloc[0]),
                     "bound_capped": bool(g["bound_capped"].iloc[0]),
                     "seeds": int(g["seeds"].max()), "tests": int(g["tests"].iloc[0]), "cells_beyond": len(beyond), "cells_beyond_at_1x": int(at_1x["beyond"].sum()),
                     "beyond_retrieved": len(found),
                     "farthest_retrieved": int(found["distance"].max()) if not found.empty else math.nan,
                     "seeds_learned_at_1x": len(learned), "seeds_superficial": len(superficial), "word": word})
    return pd.DataFrame(rows)


def _tasks_and_heads(own: pd.DataFrame, configs: Mapping[str, DictConfig], runs: pd.DataFrame):
    """Each label's passkey task (its parameters place the needle, so a label's own runs give its distances)
    and head dimension, read from the label's first run."""
    dirs = runs.set_index("run_id")["run_dir"]
    tasks, d_head = {}, {}
    for label, rid in own.drop_duplicates("model")[["model", "run_id"]].itertuples(index=False):
        cfg = configs[dirs[rid]]
        d_head[label] = head_dim_of(cfg)
        tasks[label] = TaskSpec.from_mapping(OmegaConf.to_container(cfg.task, resolve=True)).build()
    return tasks, d_head
