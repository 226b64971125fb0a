"""The summary section (posbench/report/sections/summary.py): how the numbers were scored, then the
verdicts; with several training budgets, each verdict at its row's largest."""

import pandas as pd

from posbench.report.sections.summary import Summary, budget_headline
from tests.helpers import run_section


def test_the_summary_says_how_the_numbers_were_scored_then_the_verdicts(sweep_context, tmp_path):
    md, written = run_section(Summary, sweep_context, tmp_path)
    assert md.startswith("## Summary") and written == {}
    assert "**How the numbers were scored** (protocols, text and training budget):" in md
    assert all(f"`{p}`" in md for p in ("nonoverlapping", "sliding", "fixed_target"))


def test_with_several_budgets_the_summary_names_what_settled_and_what_still_moves():
    from posbench.report.budgets import trend
    from tests.report.test_budgets import rows

    nope = trend(rows([(600, 3.99, 1.49, 10.66, "broken"), (1200, 5.77, 1.17, 28.42, "undecided")]), "16x/1x")
    trends = pd.DataFrame({"variant": ["rope", "alibi", "fire", "nope"], "largest": [1200] * 4,
                           "verdict at largest": ["broken", "flat", "undecided", "undecided"],
                           "trend": ["settled since 600 steps, 16x/1x 1.90 at 600 to 2.40 at 1200", "still moving (down: 1.20 at 600 to 1.03 at 1200)",
                                     "not settled: undecided at 600 and 1200 steps", nope]})
    text = budget_headline(trends)
    assert text.startswith("**Budgets.** The runs were trained for several budgets; every verdict below is read at "
                           "its row's largest budget (1200 steps).")
    assert "Settled: `rope` broken (since 600 steps, 16x/1x 1.90 at 600 to 2.40 at 1200)." in text
    assert "Still moving: `alibi` flat (down: 1.20 at 600 to 1.03 at 1200)." in text
    assert "Not settled: `fire` undecided (undecided at 600 and 1200 steps), `nope` undecided (broken at 600, " \
           "undecided at 1200 steps, overlapping intervals)." in text  # no row left out, every bracket closed
