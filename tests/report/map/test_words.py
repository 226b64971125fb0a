"""posbench/report/map/words.py: too few seeds or undecided points cannot be told; the budget axis's word
follows the budget section's trend (a made-up change along the training length and a holding row:
test_points.py)."""

import pandas as pd

from posbench.report.analysis import points as P
from posbench.report.map import words as W
from tests.report.analysis.test_points import map_records, words_along


def test_one_seed_or_undecided_points_cannot_be_told():
    evals, runs = map_records({("alone", 32): 1.0, ("alone", 64): 1.6}, seeds=1)
    _, changes, found = words_along(evals, runs, P.TRAIN_LEN)
    assert found["alone"][0] == W.CANNOT and "1 seed(s)" in found["alone"][1]
    # seeds that disagree: the ratio straddles the flat / mild border at both points, no change resolved
    evals, runs = map_records({("noisy", 32): 1.06, ("noisy", 64): 1.07}, noise=0.08)
    _, _, found = words_along(evals, runs, P.TRAIN_LEN)
    assert found["noisy"][0] == W.CANNOT and "undecided" in found["noisy"][1]


def test_budget_words_follow_the_budget_trend():
    assert W.budget_word([("small L64", "stable: flat, within +-5% ..."), ("tiny L64", "stable: flat ...")])[0] == W.HOLDS
    assert W.budget_word([("a", "stable: flat"), ("b", "class stable, ratio moving (...)")])[0] == W.CHANGES
    assert W.budget_word([("a", "class stable, change not resolved (...)")])[0] == W.CANNOT
    assert W.budget_word([("a", "undecided, ratio moving: undecided at 600, undecided at 1200 steps (...)")])[0] == W.CHANGES
    assert W.budget_word([("a", "undecided: undecided at 600, undecided at 1200 steps (x1.10 [0.9, 1.3])")])[0] == W.CANNOT
    assert W.budget_word([("a", "one budget")]) == (W.CANNOT, "one budget")


def test_a_bounded_change_beside_an_undecided_point_is_said_bounded():
    """The word is "cannot be told" (one point undecided), but the step's change was bounded by its
    equivalence test: the reason says so, not "not resolved nor bounded"."""
    line = pd.DataFrame({"corpus": ["stdlib", "pydocs"], "verdict": ["flat", "undecided"]})
    step = {"from": "stdlib", "to": "pydocs", "whole": False, "change": 1.003, "change_lo": 0.999,
            "change_hi": 1.008, "change_lo90": 1.0, "change_hi90": 1.007, "p": 0.2, "seeds": 3,
            "paired": True, "statistic": "equal context"}
    word, why = W.word(line, pd.DataFrame([step]), "corpus", numeric=False)
    assert word == W.CANNOT and "undecided or no verdict at pydocs" in why
    assert "changes within +-5% over the step (TOST): stdlib -> pydocs" in why and "not resolved nor bounded" not in why
    wide = dict(step, change_lo=0.9, change_hi=1.2, change_lo90=0.92, change_hi90=1.15)
    assert "changes not resolved nor bounded: stdlib -> pydocs" in W.word(line, pd.DataFrame([wide]), "corpus", False)[1]


def test_a_step_resolved_alone_is_no_change_after_holm_over_the_line():
    """Four tests on one line (three steps and the whole): a step whose own interval just excludes no
    change (p = 0.03) is not a change of the line after Holm's adjustment; a strong one (p = 0.001) is."""
    line = pd.DataFrame({"train_len": [32, 64, 128, 256], "verdict": ["broken"] * 4})

    def step(a, b, p, lo, whole=False):
        return {"from": a, "to": b, "whole": whole, "change": 1.1, "change_lo": lo, "change_hi": 1.2,
                "change_lo90": lo + 0.01, "change_hi90": 1.18, "p": p, "seeds": 3, "paired": True,
                "statistic": "equal context"}
    flat = [step(64, 128, 0.6, 0.9), step(128, 256, 0.5, 0.9), step(32, 256, 0.4, 0.9, whole=True)]
    word, why = W.word(line, pd.DataFrame([step(32, 64, 0.03, 1.01)] + flat), "train_len", numeric=True)
    assert word == W.CANNOT and "resolved alone but not after Holm's adjustment over the line's 4 tests: 32 -> 64" in why
    word, why = W.word(line, pd.DataFrame([step(32, 64, 0.001, 1.05)] + flat), "train_len", numeric=True)
    assert word == W.CHANGES and why.startswith("32 -> 64: broken to broken, rises x1.10 per doubling [1.05, 1.20]")
    assert "Holm-adjusted p = 0.004 over 4 tests" in why


def test_budget_ratio_moving_at_one_point_of_many_is_adjusted_over_the_points():
    moving = "class stable, ratio moving (600 to 1200 steps: x1.10 per doubling [1.01, 1.20])"
    unresolved = "class stable, change not resolved (600 to 1200 steps: x1.05 per doubling [0.9, 1.2])"
    word, why = W.budget_word([("a", moving, 0.02), ("b", unresolved, 0.5), ("c", unresolved, 0.6)])
    assert word == W.CANNOT and why.startswith("ratio moving at a alone, not after Holm's adjustment over 3 points")
    assert W.budget_word([("a", moving, 0.001), ("b", unresolved, 0.5), ("c", unresolved, 0.6)])[0] == W.CHANGES
    assert W.budget_word([("a", "moving: flat at 600 to mild at 1200 steps (...)", 0.2), ("b", unresolved, 0.5)])[0] == W.CHANGES


def test_the_equivalence_margin_is_over_the_step_not_per_doubling():
    """A size step of 2.6 doublings whose change is +-3% per doubling is a change of about 8% over the
    step: not "holds" (per doubling it would have passed with a 13% tolerance over the step); the same
    per-doubling bounds over a step of one doubling hold."""
    line = pd.DataFrame({"params": [1, 6], "verdict": ["flat", "flat"]})
    step = {"from": 1, "to": 6, "whole": False, "change": 1.0, "change_lo": 0.96, "change_hi": 1.04,
            "change_lo90": 0.97, "change_hi90": 1.03, "p": 0.9, "seeds": 3, "paired": True,
            "statistic": "equal context", "distance": 2.6}
    word, why = W.word(line, pd.DataFrame([step]), "params", numeric=True)
    assert word == W.CANNOT and "not resolved nor bounded" in why
    word, why = W.word(line, pd.DataFrame([{**step, "distance": 1.0}]), "params", numeric=True)
    assert word == W.HOLDS and "within +-5% over the step" in why


def test_a_change_that_one_document_decides_says_so():
    line = pd.DataFrame({"train_len": [32, 64], "verdict": ["broken", "undecided"]})
    step = {"from": 32, "to": 64, "whole": False, "change": 0.88, "change_lo": 0.81, "change_hi": 0.95,
            "change_lo90": 0.83, "change_hi90": 0.94, "p": 0.01, "seeds": 3, "paired": True,
            "statistic": "equal context", "distance": 1.0, "one_document": True}
    word, why = W.word(line, pd.DataFrame([step]), "train_len", numeric=True)
    assert word == W.CHANGES and "one scored document decides its sign" in why
    word, why = W.word(line, pd.DataFrame([{**step, "one_document": False}]), "train_len", numeric=True)
    assert "one scored document" not in why
