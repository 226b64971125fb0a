"""posbench/report/analysis/convergence.py: verdicts and their interval classes, the last doubling, and the
warnings that keep a ratio from being read without its training budget."""

import math

import pandas as pd
import pytest

from posbench.report.analysis.convergence import (
    at_largest_budget,
    budget_paragraph,
    convergence,
    convergence_table,
    last_doubling,
    spread_warnings,
    stability,
    verdict,
)


def test_last_doubling_known_values():
    h = pd.DataFrame({"step": [100, 150, 200, 300], "val_loss": [3.0, 2.5, 2.4, 2.0]})
    d = last_doubling(h)
    assert (d["from_step"], d["to_step"], d["estimated"]) == (150, 300, False)
    assert d["change"] == pytest.approx(0.2)  # (2.5 - 2.0) / 2.5
    # no point at half the budget: the latest before it, scaled to one doubling (log2(300/100))
    d = last_doubling(h[h["step"] != 150])
    assert (d["from_step"], d["estimated"]) == (100, True)
    assert d["change"] == pytest.approx((3.0 - 2.0) / 3.0 / math.log2(3))
    # none before half: the earliest point (200 -> 300 is 0.585 of a doubling)
    d = last_doubling(h[h["step"] >= 200])
    assert d["change"] == pytest.approx((2.4 - 2.0) / 2.4 / math.log2(1.5))
    assert math.isnan(last_doubling(h.iloc[-1:])["change"])
    assert math.isnan(last_doubling(pd.DataFrame({"step": [1], "loss": [2.0]}))["change"])


def test_a_budget_branch_s_fall_is_read_from_the_annealed_branch_before_it():
    """Within one run the fall from half the budget includes the annealing; between two cool-down
    branches of one trunk it is what the longer budget learnt. The smallest branch has no branch
    before it (its fall stays within the run), and the paragraph and table read the largest budget."""
    def run(run_id, steps, val, trunk):
        return {"run_id": run_id, "status": "completed", "encoding": "rope", "model": "small", "train_len": 64, "seed": 0,
                "train_steps": steps, "train_tokens": steps * 2048, "final_val_loss": val, "run_dir": run_id, "trunk": trunk}

    runs = pd.DataFrame([run("b600", 600, 2.0, "t"), run("b1200", 1200, 1.8, "t"), run("b2400", 2400, 1.75, "t"),
                         run("alone", 300, 2.5, None)])
    # within each run, a fall from half the budget that the annealing inflates
    histories = {r: pd.DataFrame({"step": [s // 2, s], "val_loss": [v * 1.2, v]})
                 for r, s, v in zip(runs["run_id"], runs["train_steps"], runs["final_val_loss"])}
    conv = convergence(runs, histories).set_index("run_id")
    assert conv.loc["b1200", "basis"] == "annealed" and conv.loc["b1200", "change"] == pytest.approx(0.1)  # (2.0-1.8)/2.0
    assert (conv.loc["b2400", "from_step"], conv.loc["b2400", "to_step"]) == (1200, 2400)
    assert conv.loc["b2400", "change"] == pytest.approx(0.05 / 1.8) and conv.loc["b2400", "still_improving"]
    assert conv.loc["b600", "basis"] == "within the run" and conv.loc["b600", "change"] == pytest.approx(0.2 / 1.2)
    # the configuration's largest budget, as the main table reads it: not a run of fewer steps (as a
    # seed of a sweep still running whose longer branches are not done)
    assert conv["largest_budget"].to_dict() == {"b600": False, "b1200": False, "b2400": True, "alone": False}
    largest = at_largest_budget(conv.reset_index())
    assert set(largest["run_id"]) == {"b2400"}
    branch = largest[largest["run_id"] == "b2400"]
    assert convergence_table(branch)["steps compared"].tolist() == ["1200→2400 annealed"]
    # a sweep still running: the 2400-step branch trained but not yet evaluated. The largest budget is
    # the main table's (the largest with records), 1200, not one the table has no number of
    pending = convergence(runs, histories, evaluated={"b600", "b1200", "alone"}).set_index("run_id")
    assert pending["largest_budget"].to_dict() == {"b600": False, "b1200": True, "b2400": False, "alone": False}
    assert "From the annealed models of the budget before to those of the largest, the 1x validation loss still " \
           "fell by 2.8%;" in budget_paragraph(branch, 0.02)
    # without a branch among the runs, the CSV keeps its columns of before
    alone = convergence(runs[runs["run_id"] == "alone"], histories)
    assert "basis" not in alone and "largest_budget" not in alone and alone["change"].iloc[0] == pytest.approx(0.2 / 1.2)


def test_a_rise_is_said_as_a_rise_not_as_a_negative_fall():
    conv = pd.DataFrame({"steps": [1000] * 3, "train_tokens": [2048000] * 3, "change": [-0.5, 0.1, 0.3],
                         "still_improving": [False, True, True], "estimated": [False] * 3})
    text = budget_paragraph(conv, 0.02)
    assert "fell in 2 of 3 runs, by up to 30.0% and rose in 1, by up to 50.0% (median fall 10.0%)" in text
    assert "-50" not in text and "2 of 3 runs were still improving" in text
    # most runs rose: the median is a rise, said as one
    text = budget_paragraph(conv.assign(change=[-0.5, -0.2, 0.1]), 0.02)
    assert "fell in 1 of 3 runs, by up to 10.0% and rose in 2, by up to 50.0% (median rise 20.0%)" in text
    # every run rose: no "fell by up to -7%"
    text = budget_paragraph(conv.assign(change=[-0.3, -0.1, -0.2], still_improving=False), 0.02)
    assert "rose in all 3 runs, by 10.0% to 30.0% (median 20.0%)" in text and "fell" not in text
    # a run that did not change beside one that rose is not "rose in every run"; nor a minus sign anywhere
    text = budget_paragraph(conv.iloc[:2].assign(change=[0.0, -0.1], still_improving=False), 0.02)
    assert "did not change in 1 of 2 runs and rose in 1, by up to 10.0% (median rise 5.0%)" in text and "-" not in text
    # one run: one number, no median of one
    text = budget_paragraph(conv.iloc[:1].assign(change=[-0.05], still_improving=False), 0.02)
    assert "rose in the one run, by 5.0%;" in text and "median" not in text
    text = budget_paragraph(conv.iloc[:1].assign(change=[0.05]), 0.02)
    assert "still fell by 5.0%;" in text


def test_verdict_classes():
    assert [verdict(r, 0.05) for r in (0.9, 1.05, 1.06, 1.3, 1.31, float("nan"))] == \
        ["flat", "flat", "mild", "mild", "broken", "n/a"]


def test_spread_warning_names_the_extremes_and_ignores_variants():
    table = pd.DataFrame({"protocol": "nonoverlapping", "model": "small", "train_len": 64,
                          "variant": ["rope", "nope", "alibi", "rope+yarn@16x"], "1x": [7.0, 10.0, 7.2, 50.0]})
    (w,) = spread_warnings(table, {"rope", "nope", "alibi"}, 0.10)
    assert "7.00 (`rope`)" in w and "10.00 (`nope`)" in w and "43% apart" in w
    assert spread_warnings(table, {"rope", "alibi"}, 0.10) == []  # 3% apart


def test_stability_detects_a_verdict_that_flips():
    curves = pd.DataFrame({
        "model": "tiny", "train_len": 64, "multiple": 16.0, "train_tokens": 0, "ppl_1x": 5.0, "seeds": 2,
        "encoding": ["nope", "nope", "alibi", "alibi"], "step": [500, 1000, 500, 1000], "ratio": [1.3, 5.6, 0.99, 0.98]})
    wide, (note,) = stability(curves, 0.05)
    assert "verdicts changed for `nope`" in note and "order of the ratios held" in note
    assert wide.set_index("encoding").loc["nope", "step 1000"] == "5.60 broken"


def test_interval_verdict_classes():
    from posbench.report.analysis.convergence import interval_verdict

    assert interval_verdict(0.97, 1.04, 1.0, 0.05) == "flat"
    assert interval_verdict(1.06, 1.29, 1.1, 0.05) == "mild"
    assert interval_verdict(1.31, 2.0, 1.5, 0.05) == "broken"
    assert interval_verdict(1.01, 1.07, 1.04, 0.05) == "undecided"
    assert interval_verdict(1.25, 1.35, 1.3, 0.05) == "undecided"
    assert interval_verdict(float("nan"), float("nan"), 1.02, 0.05) == "flat, no interval"


def test_a_checkpoint_scored_by_posbench_eval_hf_has_no_budget_in_the_convergence_table():
    """A run of posbench-eval-hf (a ``checkpoint`` block in its config) was not trained by posbench: it is
    left out of the budgets and falls (else the summary reads "0 and 1200 optimiser steps")."""
    from omegaconf import OmegaConf

    from posbench.report.analysis.convergence import trained_runs

    runs = pd.DataFrame({"run_dir": ["runs/rope", "runs/hf-llama"], "run_id": ["rope", "hf-llama"]})
    configs = {"runs/rope": OmegaConf.create({"train": {"steps": 1200}}),
               "runs/hf-llama": OmegaConf.create({"checkpoint": {"name": "llama"}, "train": {"lr": 0.0}})}
    assert list(trained_runs(runs, configs)["run_id"]) == ["rope"]
    assert list(trained_runs(runs, {})["run_id"]) == ["rope", "hf-llama"]  # no config: trained, as before
