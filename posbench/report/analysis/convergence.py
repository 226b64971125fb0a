"""The training budget behind the numbers: how far each run got in learning, and how its
extrapolation verdict moved while it trained.

A ratio such as 16x/1x mixes "learns fast" with "extrapolates" when the models compared have not
finished learning, and its size depends on the budget. The report therefore shows, beside every
table:

* per run, the relative fall of the 1x validation loss over its last doubling of steps,
  ``(v(s/2) - v(s)) / v(s/2)``. For a cool-down branch of a ``train.budgets`` trunk with a branch
  of a smaller budget, between the two annealed models (basis ``annealed``: the branch of the
  budget before, s0, and this one, scaled to one doubling when s0 is not s/2). Otherwise within
  the run (basis ``within the run``: the trainer measures validation loss at half the budget),
  which overstates what the model was still learning: at half a cosine or WSD budget the learning
  rate is still high, and part of the fall is the annealing. When a run has no validation point at
  s/2 (runs made before it did), the latest point before s/2 is used, or else the earliest one,
  and the fall is scaled to one doubling, ``change / log2(s / s0)`` (assumes loss roughly linear
  in log steps; marked "estimated"). A run whose fall exceeds ``threshold`` (default 2%) is flagged
  as still improving. The budget paragraph, the budget table and the headline read each
  configuration's largest budget (``largest_budget``), where the verdicts are read;
* per panel, a warning when the compared encodings' 1x perplexities differ by more than
  ``spread`` (default 10%: published in-distribution perplexities differ by a few percent);
* with ``eval.during_training``, the 1x perplexity and the longest multiple's ratio against
  training tokens, and whether the verdicts (flat / mild / broken and the order of the ratios)
  are the same at the last two evaluation points. Under a cosine schedule an intermediate point
  is a model mid-schedule, not one trained to that budget; only the last point is the latter.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import pandas as pd

from posbench.report.analysis.prose import join_words
from posbench.store.rundir import RUN_KEY

DEFAULT_IMPROVING = 0.02  # a run still improving: 1x validation loss fell by more over its last doubling
DEFAULT_SPREAD = 0.10  # compared encodings' 1x perplexities differ by more: a warning
# the verdict classes and their thresholds live in posbench/report/analysis/verdicts.py; re-exported here
from posbench.report.analysis.verdicts import (  # noqa: E402,F401
    FAR_MARGIN,
    FAR_UNDECIDED,
    LOCAL,
    MILD_LIMIT,
    UNDECIDED,
    USES_FAR,
    far_context_class,
    interval_verdict,
    qualified_verdict,
    verdict,
)


def last_doubling(history: pd.DataFrame | None) -> dict:
    """The relative fall of validation loss over the run's last doubling of steps (see module doc)."""
    none = {"change": math.nan, "from_step": None, "to_step": None, "estimated": False}
    if history is None or "val_loss" not in history:
        return none
    val = history.dropna(subset=["val_loss"]).sort_values("step")
    if len(val) < 2:
        return none
    end = val.iloc[-1]
    before = val[val["step"] <= end["step"] / 2]
    start = before.iloc[-1] if not before.empty else val.iloc[0]
    if not 0 < start["step"] < end["step"]:  # every validation point at one step: no fall to measure
        return none
    doublings = math.log2(end["step"] / start["step"])
    change = (start["val_loss"] - end["val_loss"]) / start["val_loss"] / doublings
    return {"change": change, "from_step": int(start["step"]), "to_step": int(end["step"]),
            "estimated": not math.isclose(doublings, 1.0)}


def trained_runs(runs: pd.DataFrame, configs: Mapping[str, Any]) -> pd.DataFrame:
    """``runs`` without those posbench did not train: checkpoints scored by ``posbench-eval-hf`` (their
    config has a ``checkpoint`` block) have no budget or training curve to read (docs/checkpoints.md)."""
    if runs.empty or "run_dir" not in runs:
        return runs
    scored = [(configs.get(d) or {}).get("checkpoint") is not None for d in runs["run_dir"]]
    return runs[[not s for s in scored]]


def convergence(runs: pd.DataFrame, histories: Mapping[str, pd.DataFrame | None],
                threshold: float = DEFAULT_IMPROVING, recorded: Mapping[str, dict] | None = None,
                evaluated: set[str] | None = None) -> pd.DataFrame:
    """One row per completed run: budget, final validation loss, fall over the last doubling, flag.
    ``histories``: each run's training curve, by run directory; ``recorded``: instead, each run's fall
    as a committed report recorded it (last_doubling's fields, by run id; a report rebuilt from records);
    ``evaluated``: the ids of the runs with records, among which each configuration's largest budget
    is found (None: every run)."""
    done = runs[runs["status"] == "completed"]
    rows = []
    for _, r in done.iterrows():
        if recorded is None:
            d = last_doubling(histories.get(r["run_dir"]))
        else:
            d = {"change": math.nan, "from_step": None, "to_step": None, "estimated": False,
                 **recorded.get(r["run_id"], {})}
        rows.append({"run_id": r["run_id"], "encoding": r["encoding"], "model": r["model"], "train_len": r["train_len"],
                     "seed": r["seed"], "steps": r["train_steps"], "train_tokens": r["train_tokens"],
                     "final_val_loss": r["final_val_loss"], "params": r.get("params"), "basis": WITHIN,
                     "trunk": r.get("trunk") if isinstance(r.get("trunk"), str) else None, **d})
    conv = pd.DataFrame(rows, columns=CONVERGENCE_COLUMNS + BRANCH_COLUMNS[:2])
    if recorded is None:
        conv = _between_branches(conv)
    conv["still_improving"] = [bool(c > threshold) if pd.notna(c) else None for c in conv["change"]]
    if conv["trunk"].isna().all():  # no budget branches: every fall within its run, each run its own largest
        return conv[CONVERGENCE_COLUMNS + ["still_improving"]]
    return conv.assign(largest_budget=_largest(conv, evaluated))


WITHIN, ANNEALED = "within the run", "annealed"
# params: the run's recorded parameter count, kept so that a report rebuilt from its records reads it (the map's size axis)
CONVERGENCE_COLUMNS = RUN_KEY + ["steps", "train_tokens", "final_val_loss", "change", "from_step", "to_step", "estimated",
                                 "params"]
BRANCH_COLUMNS = ["basis", "trunk", "largest_budget"]  # only where some run is a budget branch


def _between_branches(conv: pd.DataFrame) -> pd.DataFrame:
    """Each branch's fall from the branch of the budget before it, of the same trunk (both annealed)."""
    conv = conv.copy()
    for _, g in conv.dropna(subset=["trunk"]).groupby("trunk"):
        runs = list(g.sort_values("steps").iterrows())
        for (_, a), (i, b) in zip(runs, runs[1:]):
            if not (0 < a["steps"] < b["steps"]) or pd.isna(a["final_val_loss"]) or pd.isna(b["final_val_loss"]):
                continue
            doublings = math.log2(b["steps"] / a["steps"])
            conv.loc[i, ["basis", "change", "from_step", "to_step", "estimated"]] = [
                ANNEALED, (a["final_val_loss"] - b["final_val_loss"]) / a["final_val_loss"] / doublings,
                int(a["steps"]), int(b["steps"]), not math.isclose(doublings, 1.0)]
    return conv


def _largest(conv: pd.DataFrame, evaluated: set[str] | None = None) -> list[bool]:
    """Whether each run is of its configuration's largest budget (over seeds, as the main table reads
    each row's largest: posbench/report/analysis/sweep.py), so that a sweep still running, whose seed 2
    has only its shortest branch, does not mix that budget into the one the verdicts are read at.
    The largest is taken over the ``evaluated`` runs, as the main table takes it over records: a
    branch trained but not yet evaluated does not move the headline's budget away from the table's."""
    if conv.empty:
        return []
    counted = conv["steps"].where(conv["run_id"].isin(evaluated)) if evaluated is not None else conv["steps"]
    top = counted.groupby([conv["encoding"], conv["model"], conv["train_len"]]).transform("max")
    return (conv["steps"] == top).tolist()


def at_largest_budget(conv: pd.DataFrame) -> pd.DataFrame:
    """The runs of each configuration's largest budget: where the report reads its verdicts."""
    return conv[conv["largest_budget"].astype(bool)] if "largest_budget" in conv and not conv.empty else conv


def convergence_table(conv: pd.DataFrame) -> pd.DataFrame:
    """Per encoding, model and train_len: the budget and how much the runs were still learning."""
    rows = []
    for (enc, model, train_len), g in conv.groupby(["encoding", "model", "train_len"]):
        known = g.dropna(subset=["change"])
        steps = sorted(set(g["steps"].dropna().astype(int)))
        kinds = known["basis"] if "basis" in known else [WITHIN] * len(known)
        basis = "; ".join(sorted({f"{int(a)}→{int(b)}" + (" annealed" if k == ANNEALED else "") + (" (estimated)" if e else "")
                                  for a, b, e, k in zip(known["from_step"], known["to_step"], known["estimated"], kinds)}))
        rows.append({"encoding": enc, "model": model, "train_len": train_len,
                     "steps": "/".join(str(s) for s in steps), "train tokens (M)": round(g["train_tokens"].mean() / 1e6, 2),
                     "val loss": round(g["final_val_loss"].mean(), 4),
                     "fall over last doubling": f"{known['change'].mean():.1%}" if len(known) else "n/a",
                     "steps compared": basis or "n/a",
                     "still improving": f"{int(known['still_improving'].sum())}/{len(g)}"})
    return pd.DataFrame(rows)


# what a still-improving budget means for the numbers read beside it: (some runs improving, none)
LM_CONSEQUENCE = (", so their ratios describe models that had not finished learning: the verdicts below mix how fast "
                  "an encoding learns with how it extrapolates, and may change with a longer budget",
                  ", so the verdicts below describe models that had (nearly) finished learning at this size")
TASK_CONSEQUENCE = (", so their accuracies describe models that had not finished learning the task: a longer budget "
                    "may raise them, at train_len and beyond",
                    ", so the accuracies describe models that had (nearly) finished learning the task at this size")


def _span(lo: float, hi: float) -> str:
    """``lo`` to ``hi`` in %, one number where they print the same."""
    return f"{lo:.1%}" if f"{lo:.1%}" == f"{hi:.1%}" else f"{lo:.1%} to {hi:.1%}"


def budget_paragraph(conv: pd.DataFrame, threshold: float, title: str = "Training budget",
                     loss: str = "the 1x validation loss", consequence: tuple[str, str] = LM_CONSEQUENCE) -> str:
    """The budget of the report in one paragraph, so that no ratio (or accuracy) is read without it; ""
    where no run was trained by posbench (checkpoints scored by posbench-eval-hf: ``trained_runs``)."""
    steps = sorted(set(conv["steps"].dropna().astype(int)))
    if not steps:
        return ""
    tokens = sorted(set(conv["train_tokens"].dropna().astype(int)))
    known = conv.dropna(subset=["change"])
    text = f"**{title}:** {join_words(steps)} optimiser steps per run" + (
        f" ({join_words([f'{t / 1e6:.2f}M' for t in tokens])} training tokens). " if tokens else ". ")
    if known.empty:
        return text + ("The records do not tell whether the runs had finished learning (too few validation points, or "
                       "a report rebuilt from records without the runs' histories).")
    improving = int(known["still_improving"].sum())
    annealed = "basis" in known and (known["basis"] == ANNEALED).all()
    lead = ("From the annealed models of the budget before to those of the largest," if annealed
            else "Over the last doubling of steps")
    change = known["change"]
    n, median = len(change), change.median()
    if change.min() >= 0:
        fall = f"still fell by {_span(change.min(), change.max())}" + (f" (median {median:.1%})" if n > 2 else "")
    elif change.max() < 0:  # a negative fall is a rise: say it in words, not as "fell by -12%"
        fall = (f"rose in {'the one run' if n == 1 else f'all {n} runs'}, by {_span(-change.max(), -change.min())}"
                + (f" (median {-median:.1%})" if n > 2 else ""))
    else:
        groups = [(k, verb, tail) for k, verb, tail in (
            (int((change > 0).sum()), "fell in", f", by up to {change.max():.1%}"),
            (int((change == 0).sum()), "did not change in", ""),
            (int((change < 0).sum()), "rose in", f", by up to {-change.min():.1%}")) if k]
        words = [f"{verb} {k}{f' of {n} runs' if i == 0 else ''}{tail}" for i, (k, verb, tail) in enumerate(groups)]
        fall = (", ".join(words[:-1]) + f" and {words[-1]}"
                + f" (median {'fall' if median >= 0 else 'rise'} {abs(median):.1%})")
    text += (f"{lead} {loss} {fall}; {improving} of {len(known)} runs were still improving by more than "
             f"{threshold:.0%}")
    text += consequence[0] if improving else consequence[1]
    if known["estimated"].any():
        text += (" (runs without a validation point at half their budget: the fall between their validation points, "
                 "scaled to one doubling; see the training-budget section)")
    return text + "."


def spread_warnings(table: pd.DataFrame, encodings: set[str], spread: float = DEFAULT_SPREAD) -> list[str]:
    """A warning per (protocol, model, train_len) panel whose encodings' 1x perplexities differ by
    more than ``spread`` (only the trained encodings, not their evaluation-time variants)."""
    out = []
    plain = table[table["variant"].isin(encodings)].dropna(subset=["1x"])
    for (protocol, model, train_len), g in plain.groupby(["protocol", "model", "train_len"]):
        lo, hi = g.loc[g["1x"].idxmin()], g.loc[g["1x"].idxmax()]
        if len(g) > 1 and hi["1x"] / lo["1x"] - 1 > spread:
            out.append(f"{protocol}, {model}, train_len {train_len}: 1x perplexities range from {lo['1x']:.2f} "
                       f"(`{lo['variant']}`) to {hi['1x']:.2f} (`{hi['variant']}`), {hi['1x'] / lo['1x'] - 1:.0%} apart "
                       f"(more than {spread:.0%}): their ratios compare models at different stages of learning.")
    return out


# -- evaluation during training ------------------------------------------------------------------


def probe_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Every during-training record of the completed runs, with the run's encoding, model, train_len, seed."""
    done = runs[runs["status"] == "completed"]
    rows = [{"run_id": r["run_id"], "encoding": r["encoding"], "model": r["model"], "train_len": r["train_len"],
             "seed": r["seed"], **p}
            for _, r in done.iterrows() for p in (r.get("during_training") or [])]
    return pd.DataFrame(rows)


def probe_curves(probes: pd.DataFrame) -> pd.DataFrame:
    """Per (model, train_len, encoding, step): mean over seeds of the 1x perplexity and of the
    longest multiple's ratio to it (plain encodings only), with the tokens trained."""
    plain = probes[probes["variant"] == probes["encoding"]].dropna(subset=["ppl"])
    if plain.empty:
        return pd.DataFrame()
    longest = plain.groupby(["model", "train_len"])["multiple"].transform("max")
    one = plain[plain["multiple"] == 1].set_index(["run_id", "step"])["ppl"]
    far = plain[(plain["multiple"] == longest) & (plain["multiple"] > 1)].set_index(["run_id", "step"])
    per_run = far.assign(ppl_1x=one.reindex(far.index)).reset_index()
    per_run["ratio"] = per_run["ppl"] / per_run["ppl_1x"]
    return (per_run.groupby(["model", "train_len", "encoding", "step"])
            .agg(train_tokens=("train_tokens", "mean"), ppl_1x=("ppl_1x", "mean"), ratio=("ratio", "mean"),
                 multiple=("multiple", "first"), seeds=("run_id", "nunique"))
            .reset_index())


def stability(curves: pd.DataFrame, tolerance: float) -> tuple[pd.DataFrame, list[str]]:
    """The ratio and verdict of each encoding at each evaluation step (a wide table), and per panel
    a sentence on whether the verdicts and the order of the ratios held over the last two steps."""
    if curves.empty:
        return pd.DataFrame(), []
    wide, notes = [], []
    for (model, train_len), g in curves.groupby(["model", "train_len"]):
        steps = sorted(g["step"].unique())
        m = g["multiple"].iloc[0]
        for enc, e in g.groupby("encoding"):
            row = {"model": model, "train_len": train_len, "encoding": enc}
            for _, p in e.sort_values("step").iterrows():
                row[f"step {p['step']}"] = f"{p['ratio']:.2f} {verdict(p['ratio'], tolerance)}"
            wide.append(row)
        if len(steps) < 2:
            continue
        a, b = (g[g["step"] == s].set_index("encoding")["ratio"] for s in steps[-2:])
        common = a.index.intersection(b.index)
        changed = [enc for enc in common if verdict(a[enc], tolerance) != verdict(b[enc], tolerance)]
        same_order = list(a[common].sort_values().index) == list(b[common].sort_values().index)
        text = (f"{model}, train_len {train_len}, {m:g}x/1x between steps {steps[-2]} and {steps[-1]}: "
                + (f"verdicts changed for {', '.join(f'`{c}`' for c in changed)}" if changed else "every verdict held")
                + ("; the order of the ratios held." if same_order else "; the order of the ratios changed."))
        notes.append(text)
    return pd.DataFrame(wide), notes
