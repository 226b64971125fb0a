"""posbench/report/analysis/sweep.py: the verdict of each row at every training budget, its trend, and the
1x loss's distance from its fitted floor, on made-up records."""

import math

import numpy as np
import pandas as pd
import pytest

from posbench.report.analysis import sweep
from tests.helpers import records


def rows(spec):
    """spec: [(steps, verdict)] -> one row per budget."""
    return pd.DataFrame([{sweep.BUDGET: s, "verdict": v} for s, v in spec])


def changes(spec):
    """spec: [(from, to, change, lo, hi, lo90, hi90)] -> paired_changes rows of one row."""
    return pd.DataFrame([{"from": a, "to": b, "statistic": sweep.EQUAL, "change": c, "change_lo": lo, "change_hi": hi,
                          "change_lo90": lo90, "change_hi90": hi90, "p": 0.5, "seeds": 3} for a, b, c, lo, hi, lo90, hi90 in spec])


FLAT3 = [(1200, "flat"), (2400, "flat"), (4800, "flat")]


@pytest.mark.parametrize("spec, steps, words", [
    # the same decided class and both last steps bounded within +-5% per doubling (their 90% intervals): stable
    (FLAT3, [(1200, 2400, 1.00, 0.97, 1.03, 0.98, 1.02), (2400, 4800, 0.99, 0.97, 1.02, 0.975, 1.01)],
     "stable: flat, within +-5% per doubling over the last two steps (2400 to 4800 steps: x0.99 per doubling [0.97, 1.02])"),
    # the last step bounded, the one before not: no "stable" (the back-test: T5 looked settled, then fell)
    (FLAT3, [(1200, 2400, 1.08, 1.06, 1.10, 1.065, 1.095), (2400, 4800, 1.00, 0.99, 1.01, 0.992, 1.008)],
     "class stable, change not resolved (2400 to 4800 steps: x1.00 per doubling [0.99, 1.01])"),
    # the class holds while the ratio grows, resolved by the paired test (RoPE in the budget study)
    ([(2400, "broken"), (4800, "broken")], [(2400, 4800, 1.32, 1.13, 1.55, 1.16, 1.50)],
     "class stable, ratio moving (2400 to 4800 steps: x1.32 per doubling [1.13, 1.55])"),
    # the class holds, and neither test decides whether the ratio moved
    ([(2400, "broken"), (4800, "broken")], [(2400, 4800, 1.20, 0.90, 1.60, 0.95, 1.52)],
     "class stable, change not resolved (2400 to 4800 steps: x1.20 per doubling [0.90, 1.60])"),
    # a change of class between decided verdicts: moving, whichever way
    ([(600, "broken"), (1200, "flat")], [(600, 1200, 0.45, 0.40, 0.50, 0.41, 0.49)],
     "moving: broken at 600 to flat at 1200 steps (600 to 1200 steps: x0.45 per doubling [0.40, 0.50])"),
    # an undecided verdict at one of the last two budgets: no stability claimed; a resolved change is said
    ([(2400, "undecided"), (4800, "undecided")], [(2400, 4800, 0.80, 0.75, 0.85, 0.76, 0.84)],
     "undecided, ratio moving: undecided at 2400, undecided at 4800 steps (2400 to 4800 steps: x0.80 per doubling "
     "[0.75, 0.85])"),
    ([(2400, "undecided"), (4800, "undecided")], [(2400, 4800, 0.95, 0.85, 1.06, 0.87, 1.04)],
     "undecided: undecided at 2400, undecided at 4800 steps (2400 to 4800 steps: x0.95 per doubling [0.85, 1.06])"),
    ([(600, "flat")], [], "one budget"),
])
def test_trend_words(spec, steps, words):
    assert sweep.trend(rows(spec).sample(frac=1, random_state=0), changes(steps)) == words


def seeded(budget_ratio, seeds=3, noise=0.01):
    """Made-up records whose 2x/1x differs by seed: {(variant, steps): ratio} with seed s's ratio
    multiplied by 1 + noise (s - 1) and its 1x by a seed factor of its own."""
    evals = records({key: (5.0, 5.0 * r) for key, r in budget_ratio.items()}, seeds=seeds)
    bump = 1 + noise * (evals["seed"] - 1) * (evals["multiple"] == 2.0) * ((evals["budget_steps"] // 600) % 3 - 1)
    return evals.assign(ppl=evals["ppl"] * bump)


def test_a_made_up_change_is_found_and_none_is_invented():
    """Paired by seed: a row whose 2x/1x grows by 1.3x per doubling is "class stable, ratio moving" with
    the change inside its interval; a row whose ratio stays put (seed noise of 1%) is "stable"."""
    evals = seeded({("grows", 600): 1.5, ("grows", 1200): 1.95, ("grows", 2400): 2.535,
                    ("level", 600): 1.00, ("level", 1200): 1.00, ("level", 2400): 1.00})
    found = sweep.paired_changes(evals)
    grows = found[found["variant"] == "grows"].sort_values("to")
    assert grows["change"].tolist() == pytest.approx([1.3, 1.3], rel=0.03)
    assert (grows["change_lo"] > 1).all() and (grows["change_lo"] <= 1.3).all() and (grows["change_hi"] >= 1.3).all()
    level = found[found["variant"] == "level"]
    assert (level["change_lo"] < 1).all() and (level["change_hi"] > 1).all()  # no change invented
    trends = sweep.trends(sweep.budget_table(evals, 0.05), "2x/1x", found).set_index("variant")
    assert trends.loc["grows", "trend"].startswith("class stable, ratio moving (1200 to 2400 steps: x1.30")
    assert trends.loc["level", "trend"].startswith("stable: flat")
    assert trends.loc["grows", "last change"] == pytest.approx(1.3, rel=0.03)


def test_the_floor_of_a_power_law_is_found():
    tokens = np.array([0.6e6, 1.2e6, 2.4e6, 4.8e6, 9.6e6])
    loss = 1.5 + 40.0 * tokens ** -0.4
    e, a, alpha = sweep.fit_floor(tokens, loss)
    assert e == pytest.approx(1.5, rel=0.02) and alpha == pytest.approx(0.4, rel=0.05)
    assert all(math.isnan(v) for v in sweep.fit_floor(tokens[:3], loss[:3]))  # fewer than four budgets: no fit


def test_a_pure_power_law_has_no_floor_and_nothing_is_above_it():
    """A fit that presses E against 0 found no floor: E is 0, and "above floor" is not a huge percentage."""
    tokens = np.array([0.6e6, 1.2e6, 2.4e6, 4.8e6])
    loss = 300.0 * tokens ** -0.45
    e, _, alpha = sweep.fit_floor(tokens, loss)
    assert e == 0.0 and alpha == pytest.approx(0.45, rel=0.05)
    evals = records({("a", b): (float(np.exp(v)), float(np.exp(v))) for b, v in zip((600, 1200, 2400, 4800), loss)})
    trends = sweep.trends(sweep.budget_table(evals, 0.05), "2x/1x")
    assert trends["floor E"].tolist() == [0.0] and math.isnan(trends["above floor"].iloc[0])


def test_the_main_table_reads_the_largest_budget_and_the_budget_table_every_one():
    evals = records({("a", 600): (6.0, 9.0), ("a", 1200): (5.0, 5.1), ("b", 600): (7.0, 7.0), ("b", 1200): (6.5, 6.4)})
    assert sweep.has_budgets(evals) and not sweep.has_budgets(evals[evals[sweep.BUDGET] == 600])
    assert set(sweep.largest_budget(evals)[sweep.BUDGET]) == {1200}
    table = sweep.budget_table(evals, 0.05)
    assert sorted(zip(table["variant"], table[sweep.BUDGET])) == [("a", 600), ("a", 1200), ("b", 600), ("b", 1200)]
    a = table[table["variant"] == "a"].set_index(sweep.BUDGET)
    assert a.loc[600, "1x"] == pytest.approx(6.0, rel=1e-3) and a.loc[1200, "2x/1x"] == pytest.approx(5.1 / 5.0, rel=1e-3)
    assert a.loc[600, sweep.TOKENS] == 600 * 256
    trends = sweep.trends(table, "2x/1x", sweep.paired_changes(evals)).set_index("variant")
    assert trends.loc["a", "largest"] == 1200 and trends.loc["a", "trend"].startswith("moving: broken at 600 to flat at 1200")
    assert trends.loc["a", "1x fall"].startswith("600->1200 -")


def test_rows_of_their_own_steps_are_no_budget_axis():
    """Fine-tunes name their steps in their rows (alibi@4x+ft0, +ft4): runs of different lengths that are
    different rows make no budget axis, and none of their records is dropped."""
    evals = records({("alibi", 600): (6.0, 6.0), ("alibi@4x+ft4", 604): (5.9, 5.9)})
    evals.loc[evals["variant"] == "alibi@4x+ft4", "variant"] = "alibi@4x+ft4"
    assert not sweep.has_budgets(evals)


def test_a_budget_sweep_is_reported_with_every_branch_in_the_budget_table(compose, tmp_path, text_corpus,
                                                                           monkeypatch):
    """The branches of a real `train.budgets` sweep, through the whole report with no special case: every
    branch's numbers are in the budget table (one row's budgets together), none is listed as not
    evaluated, and the main table and the training curves read the largest budget."""
    from posbench.jobs.train import run
    from posbench.report.pipeline import build_report
    from posbench.report.sections import training_curves

    drawn, draw = [], training_curves.plot_training_curves
    monkeypatch.setattr(training_curves, "plot_training_curves", lambda runs, *rest: (drawn.append(runs), draw(runs, *rest)))

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
