"""One word per encoding and axis, from tests: does its verdict hold across the axis?

Per line (one row's points along one axis, the other settings held: points.py), from the verdict
at each point (its class: flat / mild / broken / undecided) and the tested changes of the verdict's
statistic between consecutive points and over the whole line (report/analysis/axis.py; a change is tested
where both points have ``MIN_SEEDS`` seeds or more: between different weights the seed is the unit
of evidence):

* **holds across the axis**: the class is the same and decided at every point, and every step's
  change is bounded within +-``MARGIN`` over the step (whatever its length: a step of 2.6 doublings
  of parameters is bounded as one of 1) by an equivalence test (two one-sided tests at 5%: the 90%
  interval inside; the budget trend's margin, report/analysis/sweep.py ``STABLE_MARGIN``);
* **changes**: otherwise, where some step's change, or the whole line's, is resolved: its test
  rejects "no change" at 5% after Holm's adjustment over the line's tested changes (its steps and
  the whole line: "changes" is a claim about the line, so the line is the family; a step resolved
  alone but not after the adjustment is said so): where, which way ("rises": the longer context costs more relative
  to its baseline, extrapolation worsens; "falls": it improves), the classes at both ends and the
  interval;
* **cannot be told**: neither: undecided points, steps with too few seeds or no interval, or changes
  that the seeds there are resolve neither way. The reason is said.

Each step a word describes is said with the perplexity at 1x at both its points (the main table's,
over all their seeds) and its change over the step with its 95% interval (measured where the
statistic's change is, tested alike over the seeds both points share; not between tokenizers, whose
perplexities are per token of different units; between corpora the 1x is on different text, so its
change says which text is easier): the statistic is a ratio, and a ratio that falls because its
baseline rose (a length the model trains worse at within the budget) is not better extrapolation;
the word itself rests on the ratio's test.

The budget axis is read from the budget section's trend at each point (report/analysis/sweep.py ``trend``):
**holds** where every point's trend is "stable", **changes** where one is "moving" (its class moved) or
its ratio moving ("class stable, ratio moving", "undecided, ratio moving") with the test of its last
step rejecting after Holm's adjustment over the encoding's points, else **cannot be told**.
"""

from __future__ import annotations

import pandas as pd

from posbench.report.analysis import sweep

from posbench.report.analysis import axis, bootstrap
from posbench.report.analysis.stats import ALPHA, p_phrase
from posbench.report.analysis.verdicts import UNDECIDED

HOLDS, CHANGES, CANNOT = "holds across the axis", "changes", "cannot be told"
MARGIN = sweep.STABLE_MARGIN
MIN_SEEDS = 2
DECIDED = ("flat", "mild", "broken")
# the budget trend's words (report/analysis/sweep.py ``trend``) that say its ratio moved
MOVING_TRENDS = ("moving", "class stable, ratio moving", "undecided, ratio moving")


def _unit(numeric: bool) -> str:
    return "per doubling" if numeric else "per step"


def _tested(c) -> bool:
    return pd.notna(c["change_lo"]) and int(c["seeds"]) >= MIN_SEEDS


def _no_test(c) -> str:
    if " vs " in str(c["statistic"]):
        return f"statistics differ: {c['statistic']}"
    return f"{int(c['seeds'])} seed(s)" if int(c["seeds"]) < MIN_SEEDS else "no interval"


def _step(c, numeric: bool, classes: dict, adjusted: tuple[float, int] | None = None, ppl: dict | None = None) -> str:
    way = "rises" if c["change"] > 1 else "falls"
    # the baseline beside the ratio's change: a ratio can fall because the 1x perplexity rose. Only where
    # the step's 1x change was measured (points.axis_changes): not between tokenizers, whose perplexities
    # are per token of different units
    base = ""
    if ppl and pd.notna(c.get("base_change")) and pd.notna(ppl.get(c["from"])) and pd.notna(ppl.get(c["to"])):
        span = f" [{c['base_change_lo']:.2f}, {c['base_change_hi']:.2f}]" if pd.notna(c.get("base_change_lo")) else ""
        base = f"; 1x ppl {ppl[c['from']]:.2f} -> {ppl[c['to']]:.2f} (x{c['base_change']:.2f} {_unit(numeric)}{span})"
    span = f"[{c['change_lo']:.2f}, {c['change_hi']:.2f}]" if pd.notna(c["change_lo"]) else "(no interval)"
    how = "paired by seed" if c["paired"] else "unpaired"
    holm = f", Holm-adjusted p {p_phrase(adjusted[0])} over {adjusted[1]} tests" if adjusted and adjusted[1] > 1 else ""
    one = ", one scored document decides its sign" if c.get("one_document") is True else ""
    return (f"{c['from']} -> {c['to']}{' (whole axis)' if c['whole'] else ''}: {classes.get(c['from'], '?')} to "
            f"{classes.get(c['to'], '?')}, {way} x{c['change']:.2f} {_unit(numeric)} {span}, {how}, "
            f"{int(c['seeds'])} seeds{holm}{one}{base}")


def word(line: pd.DataFrame, changes: pd.DataFrame, axis_name: str, numeric: bool) -> tuple[str, str]:
    """(word, what it rests on) for one line: ``line``, its points in axis order with ``verdict`` (the
    class) and ``axis_name`` (the point); ``changes``, its rows of report/analysis/axis.py ``step_changes``."""
    classes = dict(zip(line[axis_name], line["verdict"].fillna("").astype(str)))
    ppl = dict(zip(line[axis_name], line["ppl_1x"])) if "ppl_1x" in line else None
    at = "; ".join(f"{k}: {v or 'n/a'}" for k, v in classes.items())
    if len(classes) < 2:
        return CANNOT, f"one point ({at})"
    steps = changes[~changes["whole"].astype(bool)] if not changes.empty else changes
    tested = [c for _, c in changes.iterrows() if _tested(c)]
    same = len(set(classes.values())) == 1 and next(iter(classes.values())) in DECIDED
    bounded = not steps.empty and all(_tested(c) and axis.within_step(c, MARGIN) for _, c in steps.iterrows())
    if same and bounded and len(steps) == len(classes) - 1:
        detail = "; ".join(_step(c, numeric, classes, ppl=ppl) for _, c in steps.iterrows())
        return HOLDS, (f"{next(iter(classes.values()))} at every point, each step within +-{MARGIN:.0%} "
                       f"over the step (TOST): {detail}")
    # the line is the family: its word says "some step changed", so each test is Holm-adjusted over the line's tests
    adjusted = dict(zip(map(id, tested), bootstrap.holm([c["p"] for c in tested])))
    family = len(tested)
    moved = [c for c in tested if axis.as_change(c).moved() and (family == 1 or adjusted[id(c)] < ALPHA)]
    if moved:
        # the whole line first where it moved (a drift over the axis is the sturdier evidence: a single step of
        # 3 seeds sits near 0.05 with a df that a little more seed variance moves across it), then the steps
        shown = [c for c in moved if c["whole"]] + [c for c in moved if not c["whole"]]
        return CHANGES, "; ".join(_step(c, numeric, classes, (adjusted[id(c)], family), ppl) for c in shown) \
            + f" (verdicts: {at})"
    why = []
    if undecided := [k for k, v in classes.items() if v not in DECIDED]:
        why.append(f"{UNDECIDED} or no verdict at {', '.join(map(str, undecided))}")
    if untested := [c for _, c in steps.iterrows() if not _tested(c)]:
        why.append("no test at " + ", ".join(f"{c['from']} -> {c['to']} ({_no_test(c)})" for c in untested))
    # a step bounded by its equivalence test is said so: here the word is "cannot be told" for another reason
    # (an undecided point), and "not resolved nor bounded" would misread a change the test did bound
    if bounded_steps := [c for c in tested if axis.within_step(c, MARGIN)]:
        why.append(f"changes within +-{MARGIN:.0%} over the step (TOST): "
                   + "; ".join(_step(c, numeric, classes, ppl=ppl) for c in bounded_steps))
    if alone := [c for c in tested if axis.as_change(c).moved()] if family > 1 else []:  # resolved alone, not after the adjustment
        why.append(f"resolved alone but not after Holm's adjustment over the line's {family} tests: "
                   + "; ".join(_step(c, numeric, classes, (adjusted[id(c)], family), ppl) for c in alone))
    if open_steps := [c for c in tested if not axis.within_step(c, MARGIN) and not axis.as_change(c).moved()]:
        why.append("changes not resolved nor bounded: " + "; ".join(_step(c, numeric, classes, ppl=ppl) for c in open_steps))
    if not same and not undecided:
        why.append("the class differs between points without a resolved change")
    return CANNOT, "; ".join(why) + f" (verdicts: {at})"


def budget_word(trends: list[tuple]) -> tuple[str, str]:
    """(word, what it rests on) for the budget axis of one encoding: ``trends``, (point, the budget
    section's trend there[, the p-value of its last step's change]) for each of its points that has two
    budgets or more. A point whose class moved ("moving": two decided classes) says "changes"; one whose
    ratio moved within a class counts where its test rejects after Holm's adjustment over the points
    with a p-value (the word is a claim about the axis)."""
    trends = [(t[0], t[1], t[2] if len(t) > 2 else float("nan")) for t in trends if t[1] and t[1] != "one budget"]
    if not trends:
        return CANNOT, "one budget"
    detail = "; ".join(f"{p}: {t}" for p, t, _ in trends)
    if all(t.startswith("stable") for _, t, _ in trends):
        return HOLDS, detail
    known = [q for _, _, q in trends if pd.notna(q)]
    adjusted = iter(bootstrap.holm(known))
    holm = [next(adjusted) if pd.notna(q) else q for _, _, q in trends]
    if any(t.startswith("moving:") for _, t, _ in trends):  # the class moved between two decided classes
        return CHANGES, detail
    moving = [(p, q) for (p, t, _), q in zip(trends, holm) if t.startswith(MOVING_TRENDS)]
    if any(pd.isna(q) or q < ALPHA or len(known) == 1 for _, q in moving):
        return CHANGES, detail
    if moving:
        return CANNOT, (f"ratio moving at {', '.join(p for p, _ in moving)} alone, not after Holm's adjustment over "
                        f"{len(known)} points (adjusted p {', '.join(p_phrase(q) for _, q in moving)}); " + detail)
    return CANNOT, detail
