"""The training budget as an axis: each row's verdict at every budget its runs were trained for,
whether it has settled, and how far the 1x loss is from its floor.

A sweep with budgets holds, for one configuration (encoding, model, train_len, seed), runs that
differ only in their number of steps: the cool-down branches of one warmup-stable-decay trunk
(``train.budgets``, posbench/jobs/branches.py), each an annealed model of its budget, or separate runs.
Per row (protocol, variant, model, train_len) and budget B (training steps):

* the main table of the records at B alone (posbench/report/tables.py: 1x perplexity, the longest
  multiple's ratio to 1x with its interval and verdict);
* the trend: **settled since B_k** when the verdict class is the same at every budget from B_k to the
  largest and each consecutive pair's ratio intervals overlap (at least the last two budgets must
  agree), with the ratio at B_k and at the largest (a class can hold while its ratio doubles);
  **not settled** where the verdict is undecided at both of the last two budgets, or at one of them
  with their intervals overlapping (neither the verdict nor a change is measured); else **still
  moving**, up or down (the ratio at the largest budget against the one before);
* convergence between annealed models: the relative fall of the 1x perplexity's log (the 1x loss)
  from each budget to the next; with four or more budgets, a fit of ``L(T) = E + A T^-alpha`` to the
  1x loss against training tokens T (Hägele et al. 2024, as Kaplan et al.'s and Hoffmann et al.'s
  law in one variable), and how far the largest budget's loss is above the fitted floor E.

The headline verdict of a row is the one at its largest budget, named with that budget and trend.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from posbench.report.tables import CELL_KEYS, completed, main_table

BUDGET = "budget_steps"
TOKENS = "budget_tokens"


def with_budgets(evals: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """``evals`` with each record's run's training steps and tokens (``budget_steps``, ``budget_tokens``)."""
    if evals.empty:
        return evals.assign(**{BUDGET: pd.Series(dtype=float), TOKENS: pd.Series(dtype=float)})
    facts = runs[["run_id", "train_steps", "train_tokens"]].rename(columns={"train_steps": BUDGET, "train_tokens": TOKENS})
    return evals.drop(columns=[BUDGET, TOKENS], errors="ignore").merge(facts, on="run_id", how="left")


def has_budgets(evals: pd.DataFrame) -> bool:
    """Whether some row's runs (a table cell: protocol, variant, model, train_len; a fine-tune's row
    names its steps, so extension runs are rows of their own) were trained for more than one budget."""
    if evals.empty or BUDGET not in evals:
        return False
    done = completed(evals)
    return bool((done.groupby(CELL_KEYS)[BUDGET].nunique() > 1).any())


def largest_budget(evals: pd.DataFrame) -> pd.DataFrame:
    """The records of each row's largest budget: what the main table and the headline read."""
    top = evals.groupby(CELL_KEYS)[BUDGET].transform("max")
    return evals[top.isna() | (evals[BUDGET] == top)]


def budget_table(evals: pd.DataFrame, tolerance: float, token_sets: dict | None = None) -> pd.DataFrame:
    """One row per main-table row and budget: the main table of the records at that budget, with
    ``budget_steps`` and ``budget_tokens`` (the mean over the cell's runs)."""
    frames = []
    for steps, g in evals.groupby(BUDGET):
        t = main_table(g, tolerance, token_sets)
        if t.empty:
            continue
        tokens = g.groupby(CELL_KEYS)[TOKENS].mean().rename(TOKENS).reset_index()
        frames.append(t.assign(**{BUDGET: int(steps)}).merge(tokens, on=CELL_KEYS, how="left"))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def verdict_class(v) -> str:
    return str(v).split(",")[0] if isinstance(v, str) else ""


def trend(rows: pd.DataFrame, ratio: str) -> str:
    """The trend of one row's verdict over its budgets (``rows``: one per budget, any order)."""
    rows = rows.sort_values(BUDGET)
    rows = rows[rows[ratio].notna()]
    if len(rows) < 2:
        return "one budget"
    classes = [verdict_class(v) for v in rows["verdict"]]
    lo, hi = rows[f"{ratio}_lo"].to_numpy(), rows[f"{ratio}_hi"].to_numpy()
    overlap = [bool(lo[i] <= hi[i + 1] and lo[i + 1] <= hi[i]) for i in range(len(rows) - 1)]
    steps = rows[BUDGET].astype(int).tolist()
    since = None
    for k in range(len(rows) - 2, -1, -1):  # extend back while the class holds and intervals overlap
        if classes[k] == classes[-1] and overlap[k] and classes[-1] != "undecided":
            since = steps[k]
        else:
            break
    if since is not None:  # the class holds; the ratio beside it says how far it still moved in that class
        first = rows[ratio].iloc[steps.index(since)]
        return f"settled since {since} steps, {ratio} {first:.2f} at {since} to {rows[ratio].iloc[-1]:.2f} at {steps[-1]}"
    if classes[-1] == "undecided" and classes[-2] == "undecided":
        return f"not settled: undecided at {steps[-2]} and {steps[-1]} steps"
    if "undecided" in classes[-2:] and overlap[-1]:  # an interval across a border, and nothing separates the two
        return f"not settled: {classes[-2]} at {steps[-2]}, {classes[-1]} at {steps[-1]} steps, overlapping intervals"
    last, before = rows[ratio].iloc[-1], rows[ratio].iloc[-2]
    direction = "up" if last > before else "down" if last < before else "level"
    return f"still moving ({direction}: {rows[ratio].iloc[-2]:.2f} at {steps[-2]} to {rows[ratio].iloc[-1]:.2f} at {steps[-1]})"


def fit_floor(tokens: np.ndarray, loss: np.ndarray) -> tuple[float, float, float]:
    """(E, A, alpha) of ``L(T) = E + A T^-alpha`` fitted to the 1x loss against training tokens by least
    squares (scipy's curve_fit, E in [0, min loss], alpha in (0, 2)); NaNs where it does not fit. E = 0
    exactly where the fit pressed E against its lower bound: the losses fall as a pure power law, and
    the budgets show no floor (there is nothing to be "above")."""
    from scipy.optimize import curve_fit

    tokens, loss = np.asarray(tokens, float), np.asarray(loss, float)
    if len(tokens) < 4 or not np.isfinite(loss).all():
        return math.nan, math.nan, math.nan
    x = tokens / tokens.max()  # scaled so that A is of the order of the losses

    def law(t, e, a, alpha):
        return e + a * t ** -alpha

    try:
        (e, a, alpha), _ = curve_fit(law, x, loss, p0=(loss.min() * 0.9, loss.min() * 0.1, 0.5),
                                     bounds=([0, 0, 1e-3], [loss.min(), np.inf, 2.0]), maxfev=20000)
    except (RuntimeError, ValueError):
        return math.nan, math.nan, math.nan
    at_bound = e <= 1e-6 * loss.min()  # curve_fit stops a hair inside the bound, not on it
    return 0.0 if at_bound else float(e), float(a) * tokens.max() ** alpha, float(alpha)


def trends(table: pd.DataFrame, ratio: str | None) -> pd.DataFrame:
    """Per main-table row: its budgets, the largest, the trend of its verdict, the 1x loss's fall from
    each budget to the next (``1x fall``: "B1->B2 -3.1%, ..."), and with four or more budgets the
    fitted floor E and how far the largest budget's 1x loss is above it (``above floor``)."""
    rows = []
    for key, g in table.groupby(CELL_KEYS, sort=True):
        g = g.sort_values(BUDGET)
        loss = np.log(g["1x"].to_numpy(float))
        steps = g[BUDGET].astype(int).tolist()
        falls = [f"{steps[i]}->{steps[i + 1]} {100 * (loss[i + 1] - loss[i]) / loss[i]:+.1f}%" for i in range(len(steps) - 1)]
        e, a, alpha = fit_floor(g[TOKENS].to_numpy(float), loss)
        rows.append({**dict(zip(CELL_KEYS, key)), "budgets": ", ".join(str(s) for s in steps), "largest": steps[-1],
                     "verdict at largest": g["label"].iloc[-1] if "label" in g else g["verdict"].iloc[-1],
                     "trend": trend(g, ratio) if ratio else "", "1x fall": "; ".join(falls),
                     "floor E": e, "alpha": alpha,
                     "above floor": (loss[-1] - e) / e if np.isfinite(e) and e > 0 else math.nan})
    return pd.DataFrame(rows)
