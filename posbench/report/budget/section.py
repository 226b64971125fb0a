"""The training budget's report sections: how far each run got in learning (``budget``), and each row's
verdict at every training budget with its trend (``budget_axis``); the section registry finds them here,
as this topic's section.py.

``budget`` (order 40): how far each run got in learning (the fall of its 1x validation loss over its
last doubling of steps: between annealed budget branches where there are some), and a warning when
the compared encodings differ already at 1x.

``budget_axis`` (order 42): verdicts by training budget (runs of one configuration trained for several
budgets, e.g. the cool-down branches of ``train.budgets``): each row's 1x perplexity and ratio with
their intervals and verdict at every budget, its trend, and how far its 1x loss is from its floor
(posbench/report/analysis/sweep.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from posbench.report.analysis import convergence, sweep
from posbench.report.budget.figure import plot_budget_axis
from posbench.report.drawing.document import Bullets, Heading, Image, Para, Table
from posbench.report.section import SECTIONS, Output, Section

# one run per configuration: the fall within each run (what the reports before budget branches said)
SINGLE = ("How far each run got in learning. `fall over last doubling`: relative fall of the 1x validation loss between "
          "half the budget and its end (mean over seeds; `estimated`: runs without a validation point at half the budget, "
          "the fall between the steps compared scaled to one doubling). `still improving`: runs whose loss fell by more "
          "than {improving:.0%} (every run in `convergence.csv`).")
# several budgets: each configuration at its largest, the fall between annealed models where there are two
BRANCHES = ("How far each run got in learning, at each configuration's largest budget, where the verdicts are read "
            "(every budget in `convergence.csv`). `fall over last doubling`: relative fall of the 1x validation loss "
            "over the last doubling of steps (mean over seeds). `annealed`: between the annealed models of the budget "
            "before and this one (cool-down branches of one trunk: what a longer budget gains). Otherwise within the "
            "run, from half its budget to its end: the learning rate at half the budget is still high, so part of that "
            "fall is the annealing, and it overstates what the model was still learning. `estimated`: the steps "
            "compared are not one doubling apart, the fall scaled to one. `still improving`: runs whose loss fell by "
            "more than {improving:.0%}.")


@SECTIONS.register("budget")
class Budget(Section):
    order = 40

    def applies(self, ctx) -> bool:
        return ctx.has_lm

    def build(self, ctx, out) -> list:
        conv, improving, spread = ctx.convergence, ctx.options.improving, ctx.options.spread
        blocks = [Heading("Training budget"),
                  Para(BRANCHES.format(improving=improving) if ctx.has_budgets else SINGLE.format(improving=improving)),
                  Table(convergence.convergence_table(convergence.at_largest_budget(conv)))]
        warnings = convergence.spread_warnings(ctx.table, set(ctx.completed["encoding"]), spread)
        if warnings:
            blocks += [Para(f"**Warning:** the compared encodings differ by more than {spread:.0%} already at 1x, where "
                            "published perplexities differ by a few percent:"), *[Para(w) for w in warnings]]
        return blocks


def _cell(r, col: str, fmt: str = ".2f") -> str:
    if pd.isna(r[col]):
        return "n/e"
    span = f" [{r[f'{col}_lo']:{fmt}}, {r[f'{col}_hi']:{fmt}}]" if pd.notna(r.get(f"{col}_lo")) else ""
    return f"{r[col]:{fmt}}{span}"


# the trend columns' legend, one item per column (as one paragraph, with the lines before it, it ran to 1,900 characters)
TREND = ("`change per doubling`: how the verdict's statistic (on equal context where the row has a window control, "
         "else its ratio to 1x) moved from the budget before, per doubling of the budget, paired by seed (the budgets of "
         "one seed are cool-downs of one trunk, scored on the same documents) [95% interval].",
         "`trend`, from these tests: "
         "**stable** only where an equivalence test bounds the change within +-{margin:.0%} per doubling (two one-sided "
         "tests at 5%: its 90% interval inside) at each of the last two steps and the class is the same, decided, at the "
         "last two budgets; **class stable, ratio moving** where the class holds and the last step's interval excludes "
         "no change; **class stable, change not resolved** where the class holds and neither test decides; **moving** "
         "where the class changes; **undecided** where one of the last two verdicts is (**undecided, ratio moving** where "
         "the last step's interval excludes no change all the same).",
         "`1x fall`: the relative change "
         "of the 1x loss (log perplexity) from each budget to the next, between annealed models (this, not the fall "
         "within one schedule, says whether a row is still learning).",
         "With four or more budgets, `floor E`: the fitted "
         "L(T) = E + A T^-alpha of the 1x loss against training tokens with its 95% profile range, and how far the "
         "largest budget's loss lies `above floor`; blank where the profile range reaches 0 (the budgets do not "
         "identify a floor).")


def _change(c) -> str:
    if c is None or pd.isna(c["change"]):
        return ""
    span = f" [{c['change_lo']:.2f}, {c['change_hi']:.2f}]" if pd.notna(c["change_lo"]) else ""
    return f"x{c['change']:.2f}{span}"


CONTROL = ("`window / full`: the row's perplexity at the longest length with a window of train_len keys over "
           "without it, at that budget (above 1: the model uses context past train_len). ")


@SECTIONS.register("budget_axis")
class BudgetAxis(Section):
    order = 42  # after the training budget (40) and its during-training probes (41)
    files = (Output("budgets.csv", "the main table at every training budget"),
             Output("budget_trends.csv", "each row's trend over its budgets and its distance from the fitted floor"),
             Output("budgets.png", "1x perplexity and the longest ratio against training tokens, one line per row, and "
                                   "the verdict's change per doubling of the budget with its 95% interval"))

    def applies(self, ctx) -> bool:
        return ctx.has_lm and ctx.has_budgets and ctx.ratio_column is not None

    def build(self, ctx, out) -> list:
        table, trends, ratio, changes = ctx.budget_table, ctx.budget_trends, ctx.ratio_column, ctx.budget_changes
        out.csv("budgets.csv", table)
        out.csv("budget_trends.csv", trends)
        plain = table[~table["windowed"]]
        out.figure("budgets.png", plot_budget_axis, plain, ratio, changes)
        shown = pd.DataFrame({
            "row": plain["variant"], "model": plain["model"], "train_len": plain["train_len"],
            "budget (steps)": plain[sweep.BUDGET].astype(int),
            "tokens": [f"{t / 1e6:.2f}M" for t in plain[sweep.TOKENS]],
            "1x": [_cell(r, "1x") for _, r in plain.iterrows()],
            ratio: [_cell(r, ratio) for _, r in plain.iterrows()],
            "verdict": plain["label"] if "label" in plain else plain["verdict"]})
        if "equal_ctx" in plain and plain["equal_ctx"].notna().any():  # the verdict's own statistic beside it
            shown.insert(len(shown.columns) - 1, f"{ratio.split('/')[0]} on equal context",
                         [_cell(r, "equal_ctx") if pd.notna(r["equal_ctx"]) else "" for _, r in plain.iterrows()])
        if not changes.empty:  # each budget's change from the one before, per doubling, paired by seed
            step = {(r["protocol"], r["variant"], r["model"], r["train_len"], int(r["to"])): r for _, r in changes.iterrows()}
            shown["change per doubling"] = [
                _change(step.get((r["protocol"], r["variant"], r["model"], r["train_len"], int(r[sweep.BUDGET]))))
                for _, r in plain.iterrows()]
        if "far_gain" in plain and plain["far_gain"].notna().any():  # the window control beside the row it qualifies
            shown.insert(len(shown.columns) - 1, "window / full",
                         [_cell(r, "far_gain", ".3f") if pd.notna(r["far_gain"]) else "" for _, r in plain.iterrows()])
        # one row's budgets together, as its trend reads them (budgets.csv keeps the table's order: by budget)
        shown = shown.sort_values(["row", "model", "train_len", "budget (steps)"], kind="stable")
        identified = [np.isfinite(lo) and lo > 0 for lo in trends["floor E lo"]]  # blank where the profile reaches 0
        shown_trends = trends[["protocol", "variant", "model", "train_len", "budgets", "largest", "verdict at largest",
                               "trend", "1x fall"]].assign(**{
            "floor E [profile]": [f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if ok else "" for v, lo, hi, ok in
                                  zip(trends["floor E"], trends["floor E lo"], trends["floor E hi"], identified)],
            "alpha": [f"{v:.2f}" if np.isfinite(v) and ok else "" for v, ok in zip(trends["alpha"], identified)],
            "above floor": [f"{100 * v:.1f}%" if np.isfinite(v) and ok else "" for v, ok in zip(trends["above floor"], identified)]})
        return [Heading("Verdicts by training budget"),
                Para(("The same configurations trained for several budgets, each an annealed model of its budget "
                      "(with `train.budgets`: a cool-down branch of one warmup-stable-decay trunk, equal to a run of "
                      "that budget). Each budget's numbers are the main table's for the records at that budget "
                      "[95% intervals over text and seeds]; the main table and the summary read the largest. "
                      + (CONTROL if "window / full" in shown else "")).rstrip()),
                Bullets([item.format(margin=sweep.STABLE_MARGIN) for item in TREND]),
                Table(shown.reset_index(drop=True)),
                Image("budgets.png", self.files[2].description),
                Table(shown_trends)]
