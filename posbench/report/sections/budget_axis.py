"""Verdicts by training budget (runs of one configuration trained for several budgets, e.g. the
cool-down branches of ``train.budgets``): each row's 1x perplexity and ratio with their intervals
and verdict at every budget, its trend, and how far its 1x loss is from its floor
(posbench/report/budgets.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from posbench.report import budgets
from posbench.report.budget_figure import plot_budget_axis
from posbench.report.document import Heading, Image, Para, Table
from posbench.report.section import SECTIONS, Output, Section


def _cell(r, col: str, fmt: str = ".2f") -> str:
    if pd.isna(r[col]):
        return "n/e"
    span = f" [{r[f'{col}_lo']:{fmt}}, {r[f'{col}_hi']:{fmt}}]" if pd.notna(r.get(f"{col}_lo")) else ""
    return f"{r[col]:{fmt}}{span}"


CONTROL = ("`window / full`: the row's perplexity at the longest length with a window of train_len keys over "
           "without it, at that budget (above 1: the model uses context past train_len). ")


@SECTIONS.register("budget_axis")
class BudgetAxis(Section):
    order = 42  # after the training budget (40) and its during-training probes (41)
    files = (Output("budgets.csv", "the main table at every training budget"),
             Output("budget_trends.csv", "each row's trend over its budgets and its distance from the fitted floor"),
             Output("budgets.png", "1x perplexity and the longest ratio against training tokens, one line per row"))

    def applies(self, ctx) -> bool:
        return ctx.has_lm and ctx.has_budgets and ctx.ratio_column is not None

    def build(self, ctx, out) -> list:
        table, trends, ratio = ctx.budget_table, ctx.budget_trends, ctx.ratio_column
        out.csv("budgets.csv", table)
        out.csv("budget_trends.csv", trends)
        plain = table[~table["windowed"]]
        out.figure("budgets.png", plot_budget_axis, plain, ratio)
        shown = pd.DataFrame({
            "row": plain["variant"], "model": plain["model"], "train_len": plain["train_len"],
            "budget (steps)": plain[budgets.BUDGET].astype(int),
            "tokens": [f"{t / 1e6:.2f}M" for t in plain[budgets.TOKENS]],
            "1x": [_cell(r, "1x") for _, r in plain.iterrows()],
            ratio: [_cell(r, ratio) for _, r in plain.iterrows()],
            "verdict": plain["label"] if "label" in plain else plain["verdict"]})
        if "far_gain" in plain and plain["far_gain"].notna().any():  # the window control beside the row it qualifies
            shown.insert(len(shown.columns) - 1, "window / full",
                         [_cell(r, "far_gain", ".3f") if pd.notna(r["far_gain"]) else "" for _, r in plain.iterrows()])
        # one row's budgets together, as its trend reads them (budgets.csv keeps the table's order: by budget)
        shown = shown.sort_values(["row", "model", "train_len", "budget (steps)"], kind="stable")
        shown_trends = trends.assign(**{
            "floor E": ["none found" if v == 0 else f"{v:.3f}" if np.isfinite(v) else "" for v in trends["floor E"]],
            "alpha": [f"{v:.2f}" if np.isfinite(v) else "" for v in trends["alpha"]],
            "above floor": [f"{100 * v:.1f}%" if np.isfinite(v) else "" for v in trends["above floor"]]})
        return [Heading("Verdicts by training budget"),
                Para("The same configurations trained for several budgets, each an annealed model of its budget "
                     "(with `train.budgets`: a cool-down branch of one warmup-stable-decay trunk, equal to a run of "
                     "that budget). Each budget's numbers are the main table's for the records at that budget "
                     "[95% intervals over text and seeds]; the main table and the summary read the largest. "
                     + (CONTROL if "window / full" in shown else "") +
                     "`trend`: **settled since B** when the verdict class is the same at every budget from B on "
                     "and consecutive intervals overlap (with the ratio at B and at the largest budget: a class can "
                     "hold while its ratio grows); **not settled** when the last two budgets' verdicts are both "
                     "undecided, or one is and their intervals overlap; else **still moving** (which way, from the budget "
                     "before the largest). `1x fall`: the relative change of the 1x loss (log perplexity) from each "
                     "budget to the next, between annealed models (this, not the fall within one schedule, says "
                     "whether a row is still learning). With four or more budgets, `floor E`: the fitted "
                     "L(T) = E + A T^-alpha of the 1x loss against training tokens, and how far the largest "
                     "budget's loss lies `above floor`; `none found` where the fit put E at 0 (the losses "
                     "fall as a pure power law: no floor within these budgets' reach)."),
                Table(shown.reset_index(drop=True)),
                Image("budgets.png", self.files[2].description),
                Table(shown_trends)]
