"""The summary section (posbench/report/sections/summary.py): how the numbers were scored, then the
verdicts; with several training budgets, each verdict at its row's largest."""

import pandas as pd

from posbench.report.sections.summary import Summary, budget_lists
from tests.helpers import run_section


def test_the_summary_says_how_the_numbers_were_scored_then_the_verdicts(sweep_context, tmp_path):
    md, written = run_section(Summary, sweep_context, tmp_path)
    assert md.startswith("## Summary") and written == {}
    assert "**How the numbers were scored** (protocols, text and training budget):" in md
    assert all(f"`{p}`" in md for p in ("nonoverlapping", "sliding", "fixed_target"))


def test_with_several_budgets_the_summary_names_each_rows_trend_word():
    trends = pd.DataFrame({"variant": ["rope", "alibi", "fire", "nope", "t5"], "largest": [1200] * 5,
                           "verdict at largest": ["broken", "flat", "undecided", "broken", "mild"],
                           "trend": ["class stable, ratio moving (600 to 1200 steps: x1.32 per doubling [1.13, 1.55])",
                                     "stable: flat, within +-5% per doubling over the last step (600 to 1200 steps: x0.99 "
                                     "per doubling [0.98, 1.00])",
                                     "undecided: undecided at 600, undecided at 1200 steps (600 to 1200 steps: x1.10 per "
                                     "doubling [0.90, 1.30])",
                                     "class stable, change not resolved (600 to 1200 steps: x1.20 per doubling [0.90, 1.60])",
                                     "moving: broken at 600 to mild at 1200 steps (600 to 1200 steps: x0.78 per doubling "
                                     "[0.75, 0.82])"]})
    lead, items = budget_lists(trends)
    assert lead == ("**Budgets.** The runs were trained for several budgets; every verdict below is read at "
                    "its row's largest budget (1200 steps):")
    assert len(items) == 5  # one item per row, in the order of the trend words
    assert [i.split(":")[0] for i in items] == ["Stable (paired test, within 5% per doubling)", "Class stable, ratio moving",
                                                "Class stable, change not resolved", "Moving", "Undecided"]
    text = " ".join(items)
    assert "Class stable, ratio moving: `rope` broken (600 to 1200 steps: x1.32 per doubling [1.13, 1.55])." in text
    assert "Stable (paired test, within 5% per doubling): `alibi` flat (flat, within +-5%" in text
    assert "Undecided: `fire` undecided (undecided at 600, undecided at 1200 steps (600 to 1200 steps: x1.10 per " \
           "doubling [0.90, 1.30]))." in text
    assert "Class stable, change not resolved: `nope` broken" in text and "Moving: `t5` mild (broken at 600" in text
    assert all(f"`{v}`" in text for v in trends["variant"])  # no row left out


def test_with_several_panels_the_budget_words_name_each_row_once_with_its_panels():
    trend = "class stable, ratio moving (600 to 1200 steps: x{} per doubling [1.10, 1.60])"
    trends = pd.DataFrame({"variant": ["rope", "rope", "alibi"], "model": ["small@stdlib", "small@pydocs", "small@stdlib"],
                           "train_len": [64, 64, 64], "largest": [1200] * 3, "verdict at largest": ["broken"] * 3,
                           "trend": [trend.format("1.30"), trend.format("1.50"), trend.format("1.20")]})
    _, items = budget_lists(trends)
    assert items == ["Class stable, ratio moving: `alibi` broken at small@stdlib (x1.20 per doubling [1.10, 1.60]).",
                     "Class stable, ratio moving: `rope` broken at small@stdlib (x1.30 per doubling [1.10, 1.60]), "
                     "small@pydocs (x1.50 per doubling [1.10, 1.60])."]
