"""posbench/report/budgets.py: the verdict of each row at every training budget, its trend, and the
1x loss's distance from its fitted floor, on made-up records."""

import math

import numpy as np
import pandas as pd
import pytest

from posbench.report import budgets
from tests.helpers import records


def rows(spec, ratio="16x/1x"):
    """spec: [(steps, ratio, lo, hi, verdict)] -> one row per budget."""
    return pd.DataFrame([{budgets.BUDGET: s, ratio: r, f"{ratio}_lo": lo, f"{ratio}_hi": hi, "verdict": v}
                         for s, r, lo, hi, v in spec])


@pytest.mark.parametrize("spec, words", [
    # the same class at the last three budgets with overlapping intervals: settled since the first of them
    ([(600, 1.6, 1.5, 1.7, "broken"), (1200, 1.02, 1.00, 1.04, "flat"), (2400, 1.01, 0.99, 1.03, "flat"),
      (4800, 1.02, 1.00, 1.04, "flat")], "settled since 1200 steps, 16x/1x 1.02 at 1200 to 1.02 at 4800"),
    # the class holds and every interval overlaps the next while the ratio nearly triples: settled, and the
    # ratio says how far it moved (RoPE in the budget study)
    ([(600, 2.71, 2.12, 3.46, "broken"), (1200, 4.25, 3.23, 5.59, "broken"), (2400, 5.97, 4.52, 7.87, "broken"),
      (4800, 7.59, 4.62, 12.49, "broken")], "settled since 600 steps, 16x/1x 2.71 at 600 to 7.59 at 4800"),
    # flat to mild at the last budget: still moving, up
    ([(600, 0.98, 0.97, 0.99, "flat"), (1200, 1.01, 1.00, 1.02, "flat"), (2400, 1.10, 1.07, 1.13, "mild")],
     "still moving (up: 1.01 at 1200 to 1.10 at 2400)"),
    # the same class, but the intervals no longer overlap: still moving
    ([(600, 2.0, 1.9, 2.1, "broken"), (1200, 3.0, 2.8, 3.2, "broken")], "still moving (up: 2.00 at 600 to 3.00 at 1200)"),
    # broken to flat: moving down (T5 in a long run)
    ([(600, 2.4, 2.2, 2.6, "broken"), (1200, 1.03, 1.01, 1.05, "flat")], "still moving (down: 2.40 at 600 to 1.03 at 1200)"),
    # undecided twice is no settled verdict
    ([(600, 1.05, 1.03, 1.08, "undecided"), (1200, 1.05, 1.03, 1.08, "undecided")],
     "not settled: undecided at 600 and 1200 steps"),
    # broken, then undecided with the intervals overlapping: no change is measured, nor a verdict
    ([(2400, 3.99, 1.49, 10.66, "broken"), (4800, 5.77, 1.17, 28.42, "undecided")],
     "not settled: broken at 2400, undecided at 4800 steps, overlapping intervals"),
    # broken, then undecided clear of it: still moving
    ([(600, 2.0, 1.9, 2.1, "broken"), (1200, 1.1, 0.98, 1.3, "undecided")], "still moving (down: 2.00 at 600 to 1.10 at 1200)"),
    ([(600, 1.0, 0.99, 1.01, "flat")], "one budget"),
])
def test_trend_words(spec, words):
    assert budgets.trend(rows(spec).sample(frac=1, random_state=0), "16x/1x") == words


def test_the_floor_of_a_power_law_is_found():
    tokens = np.array([0.6e6, 1.2e6, 2.4e6, 4.8e6, 9.6e6])
    loss = 1.5 + 40.0 * tokens ** -0.4
    e, a, alpha = budgets.fit_floor(tokens, loss)
    assert e == pytest.approx(1.5, rel=0.02) and alpha == pytest.approx(0.4, rel=0.05)
    assert all(math.isnan(v) for v in budgets.fit_floor(tokens[:3], loss[:3]))  # fewer than four budgets: no fit


def test_a_pure_power_law_has_no_floor_and_nothing_is_above_it():
    """A fit that presses E against 0 found no floor: E is 0, and "above floor" is not a huge percentage."""
    tokens = np.array([0.6e6, 1.2e6, 2.4e6, 4.8e6])
    loss = 300.0 * tokens ** -0.45
    e, _, alpha = budgets.fit_floor(tokens, loss)
    assert e == 0.0 and alpha == pytest.approx(0.45, rel=0.05)
    evals = records({("a", b): (float(np.exp(v)), float(np.exp(v))) for b, v in zip((600, 1200, 2400, 4800), loss)})
    trends = budgets.trends(budgets.budget_table(evals, 0.05), "2x/1x")
    assert trends["floor E"].tolist() == [0.0] and math.isnan(trends["above floor"].iloc[0])


def test_the_main_table_reads_the_largest_budget_and_the_budget_table_every_one():
    evals = records({("a", 600): (6.0, 9.0), ("a", 1200): (5.0, 5.1), ("b", 600): (7.0, 7.0), ("b", 1200): (6.5, 6.4)})
    assert budgets.has_budgets(evals) and not budgets.has_budgets(evals[evals[budgets.BUDGET] == 600])
    assert set(budgets.largest_budget(evals)[budgets.BUDGET]) == {1200}
    table = budgets.budget_table(evals, 0.05)
    assert sorted(zip(table["variant"], table[budgets.BUDGET])) == [("a", 600), ("a", 1200), ("b", 600), ("b", 1200)]
    a = table[table["variant"] == "a"].set_index(budgets.BUDGET)
    assert a.loc[600, "1x"] == pytest.approx(6.0, rel=1e-3) and a.loc[1200, "2x/1x"] == pytest.approx(5.1 / 5.0, rel=1e-3)
    assert a.loc[600, budgets.TOKENS] == 600 * 256
    trends = budgets.trends(table, "2x/1x").set_index("variant")
    assert trends.loc["a", "largest"] == 1200 and trends.loc["a", "trend"].startswith("still moving (down")
    assert trends.loc["a", "1x fall"].startswith("600->1200 -")


def test_rows_of_their_own_steps_are_no_budget_axis():
    """Fine-tunes name their steps in their rows (alibi@4x+ft0, +ft4): runs of different lengths that are
    different rows make no budget axis, and none of their records is dropped."""
    evals = records({("alibi", 600): (6.0, 6.0), ("alibi@4x+ft4", 604): (5.9, 5.9)})
    evals.loc[evals["variant"] == "alibi@4x+ft4", "variant"] = "alibi@4x+ft4"
    assert not budgets.has_budgets(evals)


def test_a_budget_sweep_is_reported_with_every_branch_in_the_budget_table(compose, tmp_path, text_corpus,
                                                                           monkeypatch):
    """The branches of a real `train.budgets` sweep, through the whole report with no special case: every
    branch's numbers are in the budget table (one row's budgets together), none is listed as not
    evaluated, and the main table and the training curves read the largest budget."""
    from posbench.jobs.train import run
    from posbench.report import figures
    from posbench.report.pipeline import build_report

    drawn, draw = [], figures.plot_training_curves
    monkeypatch.setattr(figures, "plot_training_curves", lambda runs, *rest: (drawn.append(runs), draw(runs, *rest)))

    common = ["model=tiny", "train_len=16", "train.batch_size=4", "train.warmup_steps=2", "train.schedule=wsd",
              "train.budgets=[8,16]", "eval.multiples=[1,2]", "eval.scored_tokens=128", "eval.protocols=[nonoverlapping]",
              "data=local", f"data.path={text_corpus}", f"runs_dir={tmp_path / 'runs'}"]
    for encoding in ("alibi", "nope"):
        for seed in (0, 1):
            run(compose(*common, f"encoding={encoding}", f"seed={seed}"))
    md = build_report(tmp_path / "runs", tmp_path / "rep").read_text()
    table = pd.read_csv(tmp_path / "rep" / "budgets.csv")
    assert sorted(table["budget_steps"].unique()) == [8, 16] and set(table["seeds"]) == {2}
    assert "## Runs not in the table" not in md  # the smaller budget's runs are in the budget table
    assert "16 steps" in md.split("## Headline")[1].split("##")[0]
    assert set(drawn[0]["train_steps"]) == {16} and len(drawn[0]) == 4  # a mean over budgets would dip at a cool-down
    # the budget section lists one row's budgets together, in the order its trend reads them
    section = md.split("## Verdicts by training budget")[1].split("##")[0]
    listed = [line.split("|")[1].strip() + "@" + line.split("|")[4].strip() for line in section.splitlines()
              if line.startswith("| alibi ") or line.startswith("| nope ")][:4]
    assert listed == ["alibi@8", "alibi@16", "nope@8", "nope@16"]
