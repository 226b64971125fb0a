"""The training budget as an axis: each row's verdict at every budget its runs were trained for,
its change per doubling tested paired by seed, and how far the 1x loss is from its floor.

A sweep with budgets holds, for one configuration (encoding, model, train_len, seed), runs that
differ only in their number of steps: the cool-down branches of one warmup-stable-decay trunk
(``train.budgets``, posbench/jobs/branches.py), each an annealed model of its budget, or separate runs.
Per row (protocol, variant, model, train_len) and budget B (training steps):

* the main table of the records at B alone (posbench/report/analysis/tables.py: 1x perplexity, the longest
  multiple's ratio to 1x with its interval and verdict);
* the trend, from tests paired by seed (the budgets of one seed are cool-downs of one trunk, scored
  on the same documents): between consecutive budgets, the change of the verdict's statistic (on
  equal context where the row has a window control, else its ratio to 1x) **per doubling** of the
  budget, with the report's interval (bootstrap.paired_change). **stable** only where an
  equivalence test (two one-sided tests at 5%: the 90% interval inside +-``STABLE_MARGIN`` per
  doubling) holds at each of the last two steps and the class is the same, decided, at the last
  two budgets; **class stable, ratio moving** where the class holds but the last step's 95%
  interval excludes no change; **class stable, change not resolved** where it holds and neither
  test decides; **moving** where the class differs between the last two budgets; **undecided**
  where one of them is undecided (**undecided, ratio moving** where the last step's 95% interval
  excludes no change all the same). Each word carries the last step's factor and interval. (Until
  the evidence rule the word was "settled since B": the same class and overlapping marginal intervals,
  which is no test of a change and rewarded noisy rows.)
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

from posbench.report.analysis import axis, bootstrap
from posbench.report.analysis.tables import CELL_KEYS, PANEL_KEYS, completed, far_control, main_table, multiples, verdict_multiple

BUDGET = "budget_steps"
TOKENS = "budget_tokens"
STABLE_MARGIN = 0.05  # "stable": the change per doubling of the budget bounded within +-5% (TOST)
EQUAL = "on equal context"  # which statistic a change is of (paired_changes' ``statistic``)
LEVEL = "1x"  # row_parts_and_levels' second: the perplexity at 1x, the baseline a ratio is read against


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


def budget_table(evals: pd.DataFrame, tolerance: float, token_sets: dict | None = None,
                 multiple: float | None = None) -> pd.DataFrame:
    """One row per main-table row and budget: the main table of the records at that budget (its
    verdicts at ``multiple``, the main table's: tables.verdict_multiple), with ``budget_steps`` and
    ``budget_tokens`` (the mean over the cell's runs)."""
    frames = []
    for steps, g in evals.groupby(BUDGET):
        t = main_table(g, tolerance, token_sets, multiple=multiple if multiple in multiples(g) else None)
        if t.empty:
            continue
        tokens = g.groupby(CELL_KEYS)[TOKENS].mean().rename(TOKENS).reset_index()
        frames.append(t.assign(**{BUDGET: int(steps)}).merge(tokens, on=CELL_KEYS, how="left"))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def verdict_class(v) -> str:
    return str(v).split(",")[0] if isinstance(v, str) else ""


def row_parts(evals: pd.DataFrame, token_sets: dict | None = None, replicates: int = bootstrap.REPLICATES,
              multiple: float | None = None) -> dict[tuple, tuple[str, bootstrap.Parts]]:
    """Each main-table row's verdict statistic at each of its budgets, per seed, ready for paired tests:
    {(*CELL_KEYS, budget steps): (statistic, Parts)}, the statistic on equal context (EQUAL) where the
    row has a window control at every budget, else its ratio to 1x (named ``<M>x/1x``); a windowed row
    (a control) by its ratio, as its verdict is. Rows of one panel share their document draws."""
    return row_parts_and_levels(evals, token_sets, replicates, multiple)[0]


def row_parts_and_levels(evals: pd.DataFrame, token_sets: dict | None = None, replicates: int = bootstrap.REPLICATES,
                         multiple: float | None = None) -> tuple[dict, dict]:
    """row_parts, and beside it each row's perplexity at 1x in the same form ({key: (LEVEL, Parts)}: the
    baseline the statistic is read against), from the same document draws in one pass."""
    done = completed(evals)
    longest = verdict_multiple(done, multiple if multiple in multiples(done) else None)
    done = done[done["multiple"] <= longest] if longest is not None else done  # longer: extra columns, no verdict
    ms = multiples(done)
    if len(ms) < 2 or ms[0] != 1.0 or BUDGET not in done:
        return {}, {}
    k, ratio = len(ms) - 1, f"{ms[-1]:g}x/1x"
    out, levels = {}, {}
    for panel, pg in done.groupby(PANEL_KEYS, sort=True):
        doc_tokens, draws = bootstrap.panel_text(pg, token_sets, replicates)
        cells = {key: bootstrap.cell_replicates(g, ms, doc_tokens, draws) for key, g in pg.groupby(["variant", BUDGET])}
        windowed = set(pg.loc[pg["windowed"].fillna(False).astype(bool), "variant"]) if "windowed" in pg else set()
        for variant in sorted(set(pg["variant"])):
            steps = sorted(int(b) for v, b in cells if v == variant)
            controls = [cells.get((far_control(variant), b)) for b in steps]
            equal = variant not in windowed and all(c is not None for c in controls)  # one statistic along the row
            for b, c in zip(steps, controls):
                parts = bootstrap.equal_context_parts(cells[(variant, b)], c, k) if equal else \
                    bootstrap.ratio_parts(cells[(variant, b)], k)
                out[(panel[0], variant, panel[1], panel[2], b)] = (EQUAL if equal else ratio, parts)
                levels[(panel[0], variant, panel[1], panel[2], b)] = (LEVEL, bootstrap.level_parts(cells[(variant, b)]))
    return out, levels


def parts_of(ctx) -> tuple[dict, dict]:
    """``row_parts_and_levels`` of a report's records at its verdict's multiple, computed once per report
    (ctx.derived) for every section that reads them (the map, the forecast)."""
    return ctx.derived("row_parts_and_levels",
                       lambda: row_parts_and_levels(ctx.evals, ctx.token_sets, multiple=ctx.multiple))


def budget_parts_of(ctx) -> dict:
    """``row_parts`` of a report's records at every budget (ctx.budget_evals), computed once per report."""
    return ctx.derived("budget_row_parts", lambda: row_parts(ctx.budget_evals, ctx.token_sets, multiple=ctx.multiple))


def paired_changes(evals: pd.DataFrame, token_sets: dict | None = None,
                   replicates: int = bootstrap.REPLICATES, multiple: float | None = None) -> pd.DataFrame:
    """Per main-table row and pair of consecutive budgets: the change of the verdict's statistic
    (row_parts) per doubling of the budget, paired by seed (bootstrap.paired_change): columns
    CELL_KEYS, ``from``, ``to`` (steps), ``statistic``, ``change`` with ``_lo`` / ``_hi`` (95%) and
    ``_lo90`` / ``_hi90``, ``p``, ``seeds``."""
    parts = row_parts(evals, token_sets, replicates, multiple)
    out = axis.step_changes(parts, CELL_KEYS, lambda a, b: math.log2(b / a))
    return out.drop(columns=["paired", "whole"]) if not out.empty else pd.DataFrame()


def _per_doubling(c) -> str:
    span = f" [{c['change_lo']:.2f}, {c['change_hi']:.2f}]" if pd.notna(c["change_lo"]) else " (no interval)"
    return f"x{c['change']:.2f} per doubling{span}"


def trend(rows: pd.DataFrame, changes: pd.DataFrame | None = None) -> str:
    """The trend of one row's verdict over its budgets (``rows``: one per budget, any order, with
    ``verdict``; ``changes``: its paired_changes rows). Words in the module doc."""
    rows = rows.sort_values(BUDGET)
    steps = rows[BUDGET].astype(int).tolist()
    if len(rows) < 2:
        return "one budget"
    classes = [verdict_class(v) for v in rows["verdict"]]
    changes = pd.DataFrame() if changes is None or changes.empty else changes.sort_values("to")
    if changes.empty or changes["change"].isna().all():
        return f"{classes[-2]} at {steps[-2]}, {classes[-1]} at {steps[-1]} steps; no paired test (no shared seeds)"
    last = changes.iloc[-1]
    tested = [axis.as_change(c) for _, c in changes.tail(2).iterrows()]
    same = classes[-1] == classes[-2] and classes[-1] not in ("undecided", "n/a", "")
    where = f"{steps[-2]} to {steps[-1]} steps: {_per_doubling(last)}"
    if same and all(t.within(STABLE_MARGIN) for t in tested):
        span = "the last two steps" if len(tested) == 2 else "the last step"
        return f"stable: {classes[-1]}, within +-{STABLE_MARGIN:.0%} per doubling over {span} ({where})"
    if same and tested[-1].moved():
        return f"class stable, ratio moving ({where})"
    if same:
        return f"class stable, change not resolved ({where})"
    if "undecided" in classes[-2:]:
        # an undecided class with a resolved change: the ratio moves though its class is not known (FIRE in the map)
        lead = "undecided, ratio moving" if tested[-1].moved() else "undecided"
        return f"{lead}: {classes[-2]} at {steps[-2]}, {classes[-1]} at {steps[-1]} steps ({where})"
    return f"moving: {classes[-2]} at {steps[-2]} to {classes[-1]} at {steps[-1]} steps ({where})"


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


def floor_range(tokens: np.ndarray, loss: np.ndarray, grid: int = 60) -> tuple[float, float]:
    """The profile range of the floor E: the values of E (a grid over [0, min loss]) whose best fit of
    A and alpha leaves a residual sum of squares within the 95% profile bound, ``SSE(E) <= SSE_min (1 +
    F(1, n - 3) / (n - 3))`` (n budgets, 3 parameters). With four budgets one residual degree of
    freedom is left, F(1, 1) = 161: the range is wide, and where it reaches 0 the budgets do not
    identify a floor (the report then leaves E blank). NaNs where the fit does not run."""
    from scipy.optimize import curve_fit
    from scipy.stats import f as fisher

    tokens, loss = np.asarray(tokens, float), np.asarray(loss, float)
    n = len(tokens)
    if n < 4 or not np.isfinite(loss).all():
        return math.nan, math.nan
    x = tokens / tokens.max()
    values, sse = np.linspace(0.0, loss.min() * (1 - 1e-6), grid), []
    for e in values:
        try:
            (a, alpha), _ = curve_fit(lambda t, a, al: e + a * t ** -al, x, loss, p0=(max(loss.min() - e, 1e-3), 0.5),
                                      bounds=([0, 1e-3], [np.inf, 2.0]), maxfev=20000)
            sse.append(float(((e + a * x ** -alpha - loss) ** 2).sum()))
        except (RuntimeError, ValueError):
            sse.append(math.inf)
    sse = np.asarray(sse)
    if not np.isfinite(sse).any():
        return math.nan, math.nan
    bound = sse.min() * (1 + fisher.ppf(0.95, 1, n - 3) / (n - 3))
    inside = values[sse <= bound]
    return float(inside.min()), float(inside.max())


def trends(table: pd.DataFrame, ratio: str | None, changes: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per main-table row: its budgets, the largest, the trend of its verdict (from ``changes``,
    paired_changes), the last step's change per doubling with its intervals, the 1x loss's fall from
    each budget to the next (``1x fall``: "B1->B2 -3.1%, ..."), and with four or more budgets the
    fitted floor E with its profile range (``floor E``, ``floor E lo`` / ``hi``: fit_floor,
    floor_range) and how far the largest budget's 1x loss is above it (``above floor``)."""
    changes = pd.DataFrame() if changes is None else changes
    rows = []
    for key, g in table.groupby(CELL_KEYS, sort=True):
        g = g.sort_values(BUDGET)
        loss = np.log(g["1x"].to_numpy(float))
        steps = g[BUDGET].astype(int).tolist()
        falls = [f"{steps[i]}->{steps[i + 1]} {100 * (loss[i + 1] - loss[i]) / loss[i]:+.1f}%" for i in range(len(steps) - 1)]
        e, a, alpha = fit_floor(g[TOKENS].to_numpy(float), loss)
        e_lo, e_hi = floor_range(g[TOKENS].to_numpy(float), loss)
        mine = changes[(changes[CELL_KEYS] == pd.Series(key, index=CELL_KEYS)).all(axis=1)] if not changes.empty else changes
        last = mine.sort_values("to").iloc[-1] if not mine.empty else None
        rows.append({**dict(zip(CELL_KEYS, key)), "budgets": ", ".join(str(s) for s in steps), "largest": steps[-1],
                     "verdict at largest": g["label"].iloc[-1] if "label" in g else g["verdict"].iloc[-1],
                     "trend": trend(g, mine) if ratio else "",
                     "statistic": "" if last is None else last["statistic"],
                     **{f"last {c}": (math.nan if last is None else last[c])
                        for c in ("change", "change_lo", "change_hi", "change_lo90", "change_hi90", "p")},
                     "1x fall": "; ".join(falls),
                     "floor E": e, "floor E lo": e_lo, "floor E hi": e_hi, "alpha": alpha,
                     "above floor": (loss[-1] - e) / e if np.isfinite(e) and e > 0 else math.nan})
    return pd.DataFrame(rows)
