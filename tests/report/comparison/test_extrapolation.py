"""The comparison's test of extrapolation (posbench/report/comparison/frames.py ``extrapolation_tests``):
a row lower than its reference by the same factor at every length is ahead at 16x but does not
extrapolate better; a row whose 16x/1x is larger extrapolates worse; the word comes from the paired
difference of log-ratios only; 2 seeds say what a third would need to show; rows that cannot be
compared (no shared seed, another budget, other tokens) are refused in one line."""

import math

import numpy as np
import pandas as pd
import pytest

from posbench.core.errors import PosbenchError
from posbench.report.comparison.frames import (
    BETTER,
    NOT_SEPARABLE,
    WORSE,
    check_pairs,
    extrapolation_tests,
    paired_differences,
    refused_pairs,
)
from posbench.report.comparison.section import extrapolation_blocks
from posbench.report.drawing.document import render
from posbench.report.records.selection import ComparisonRequest

SEED_LEVEL = [0.02, -0.015, 0.004, -0.03, 0.011]  # each seed's own level (shared by its lengths)
SEED_RATIO = [0.004, -0.006, 0.002, 0.005, -0.003]  # each seed's own wobble in 16x/1x


def rows(spec, seeds=3, budget=1200, token_set="t"):
    """Made-up records: {variant: (ppl 1x, ppl 16x, offset)} -> records of one panel, one run per
    seed; ``offset`` moves the row's seed wobbles so that two rows' seeds are not identical."""
    out = []
    for variant, (one, far, offset) in spec.items():
        for seed in range(seeds):
            level = math.exp(SEED_LEVEL[seed] + 0.003 * offset * (seed - 1))
            wobble = math.exp(SEED_RATIO[(seed + offset) % len(SEED_RATIO)])
            for mult, ppl in ((1.0, one * level), (16.0, far * level * wobble)):
                out.append(dict(run_id=f"{variant}_s{seed}", encoding=variant, variant=variant, model="small",
                                train_len=64, seed=seed, status="completed", protocol="nonoverlapping",
                                length=int(64 * mult), multiple=mult, ppl=ppl, token_set=token_set, windowed=False,
                                budget_steps=budget))
    return pd.DataFrame(out)


def test_a_row_lower_at_every_length_is_ahead_at_16x_but_does_not_extrapolate_better():
    evals = rows({"alibi": (5.0, 5.1, 0), "mine": (5.0 * 0.97, 5.1 * 0.97, 1), "worse": (5.0, 5.1 * 1.3, 2)})
    request = ComparisonRequest(("alibi", "mine", "worse"))
    per_length = paired_differences(evals, request)
    at16 = per_length[(per_length["a"] == "mine") & (per_length["multiple"] == 16.0)].iloc[0]
    assert at16["hi"] < 0 and at16["p_value"] < 0.05  # lower at 16x, resolved: the question it answers
    tests = extrapolation_tests(evals, request)
    mine = tests[tests["a"] == "mine"].iloc[0]
    assert mine["word"] == NOT_SEPARABLE and mine["lo"] < 1 < mine["hi"] and mine["factor"] == pytest.approx(1, abs=0.01)
    worse = tests[tests["a"] == "worse"].iloc[0]
    assert worse["word"] == WORSE and worse["factor"] == pytest.approx(1.3, rel=0.02) and worse["lo"] > 1
    assert set(tests["multiple"]) == {16.0} and (tests["seeds"] == 3).all() and (tests["shared_seeds"] == "0 1 2").all()
    # against the worse row as reference, alibi extrapolates better: the test is antisymmetric
    back = extrapolation_tests(evals, ComparisonRequest(baseline="worse", rows=("alibi",))).iloc[0]
    assert back["word"] == BETTER and back["factor"] == pytest.approx(1 / worse["factor"], rel=1e-9)


def test_the_summary_reads_the_word_of_the_extrapolation_test_and_its_seeds(tmp_path):
    evals = rows({"alibi": (5.0, 5.1, 0), "mine": (5.0 * 0.97, 5.1 * 0.97, 1)})
    md, _ = render(extrapolation_blocks(extrapolation_tests(evals, ComparisonRequest(("alibi", "mine"))), 16.0), tmp_path, "t")
    assert "`mine` against `alibi`" in md and f"**{NOT_SEPARABLE}**" in md and "3 shared seeds" in md
    assert "ahead" not in md


def two_seed_records(ratios_a, ratios_b):
    """Records of rows a (``ratios_a``: each seed's 16x/1x) and alibi (``ratios_b``) at 1x 5.0."""
    out = []
    for variant, ratios in (("a", ratios_a), ("alibi", ratios_b)):
        for seed, r in enumerate(ratios):
            for mult, ppl in ((1.0, 5.0), (16.0, 5.0 * r)):
                out.append(dict(run_id=f"{variant}_s{seed}", encoding=variant, variant=variant, model="small",
                                train_len=64, seed=seed, status="completed", protocol="nonoverlapping",
                                length=int(64 * mult), multiple=mult, ppl=ppl, token_set="t", windowed=False))
    return pd.DataFrame(out)


def test_two_seeds_say_that_t_has_one_degree_of_freedom_and_what_a_third_would_need_to_show(tmp_path):
    """Both seeds extrapolate worse than alibi (x1.25 and x1.15) but 2 seeds leave it unresolved; the
    range given for a third seed is one where three seeds would say "worse", and its middle does."""
    evals = two_seed_records([1.25, 1.15], [1.0, 1.0])
    test = extrapolation_tests(evals, ComparisonRequest(baseline="alibi")).iloc[0]
    assert test["seeds"] == 2 and test["word"] == NOT_SEPARABLE and test["factor"] > 1
    assert 1 < test["third_lo"] < test["factor"] < test["third_hi"]
    third = math.sqrt(test["third_lo"] * test["third_hi"])
    three = two_seed_records([1.25, 1.15, third], [1.0, 1.0, 1.0])
    assert extrapolation_tests(three, ComparisonRequest(baseline="alibi")).iloc[0]["word"] == WORSE
    md, _ = render(extrapolation_blocks(pd.DataFrame([test]), 16.0), tmp_path, "t")
    assert "1 degree of freedom" in md and "a third seed would separate them if its ratio of ratios were" in md


def test_with_per_document_losses_the_test_carries_the_text():
    """Records with per-document losses: the interval adds the text's variance (wider than the seeds'
    alone), and a row lower at every length is still not separable in extrapolation."""
    rng = np.random.default_rng(0)
    tokens = rng.integers(50, 150, 40)
    hard = rng.normal(0, 0.3, 40)
    longer = rng.normal(0, 0.05, 40)
    out = []
    for variant, shift in (("alibi", 0.0), ("mine", -0.03)):
        for seed in range(3):
            s_shift = rng.normal(0, 0.01)
            for mult, extra in ((1.0, 0.0), (16.0, 0.02)):
                nats = (1.6 + shift + s_shift + extra + hard + (mult > 1) * longer) * tokens
                mean = nats.sum() / tokens.sum()
                out.append(dict(run_id=f"{variant}{seed}", encoding=variant, variant=variant, model="m", train_len=8,
                                seed=seed, status="completed", protocol="nonoverlapping", length=int(8 * mult),
                                multiple=mult, ppl=math.exp(mean), token_set="t", doc_nats=nats.tolist(), windowed=False))
    evals, sets = pd.DataFrame(out), {"t": {"doc_tokens": tokens.tolist()}}
    with_text = extrapolation_tests(evals, ComparisonRequest(("alibi", "mine")), sets, replicates=400).iloc[0]
    seeds_only = extrapolation_tests(evals.drop(columns="doc_nats"), ComparisonRequest(("alibi", "mine"))).iloc[0]
    assert with_text["factor"] == pytest.approx(seeds_only["factor"], rel=1e-9)
    assert with_text["hi"] - with_text["lo"] > seeds_only["hi"] - seeds_only["lo"]
    assert with_text["word"] == NOT_SEPARABLE


def test_a_third_seed_in_the_range_given_would_separate_the_rows_and_one_outside_would_not():
    from posbench.report.analysis.bootstrap import Parts, seeds_and_text, third_seed_range

    y = np.array([0.10, 0.16])  # two seeds' log-ratio differences: same sign, unresolved with t(1)
    assert seeds_and_text(y, None, 0).lo < 0
    lo, hi = third_seed_range(Parts((0, 1), y, None, 0, None), lambda lo, hi: lo > 0)
    assert lo < 0.13 < hi  # a third seed at the two's mean settles it
    for v, settles in ((lo + 0.002, True), (hi - 0.002, True), (lo - 0.01, False), (hi + 0.01, False)):
        assert (seeds_and_text(np.append(y, v), None, 0).lo > 0) == settles


def test_a_row_seen_on_fewer_seeds_says_which_seeds_its_test_uses(tmp_path):
    evals = rows({"alibi": (5.0, 5.1, 0), "mine": (5.0, 5.1 * 1.2, 1)})
    evals = evals[~((evals["variant"] == "mine") & (evals["seed"] == 2) & (evals["multiple"] == 16.0))]
    test = extrapolation_tests(evals, ComparisonRequest(baseline="alibi")).iloc[0]
    assert test["seeds"] == 2 and test["shared_seeds"] == "0 1" and test["seeds_a"] == 2 and test["seeds_b"] == 3
    md, _ = render(extrapolation_blocks(pd.DataFrame([test]), 16.0), tmp_path, "t")
    assert "the test uses only the shared ones" in md


@pytest.mark.parametrize("change,message", [
    (lambda e: e.assign(seed=np.where(e["variant"] == "mine", e["seed"] + 10, e["seed"])), "share no seed"),
    (lambda e: e.assign(budget_steps=np.where(e["variant"] == "mine", 600, 1200)), "trained for 600 steps"),
    (lambda e: e.assign(token_set=np.where(e["variant"] == "mine", "bpe", "t")), "scored on other tokens at 1x"),
])
def test_a_comparison_that_means_nothing_is_refused_in_one_line(change, message):
    """Named with --compare: refused in one line. Drawn by --baseline alone (every row against it): left
    out of the comparison and named with the reason, so one such row cannot stop the whole report."""
    evals = change(rows({"alibi": (5.0, 5.1, 0), "mine": (4.9, 5.0, 1)}))
    with pytest.raises(PosbenchError, match=message) as e:
        check_pairs(evals, ComparisonRequest(("alibi", "mine")))
    assert "\n" not in str(e.value) and str(e.value).startswith("--compare: cannot compare mine with alibi")
    check_pairs(evals, ComparisonRequest(baseline="alibi"))  # not named: no refusal
    assert [(a, b) for _, a, b, why in refused_pairs(evals, ComparisonRequest(baseline="alibi")) if message in why] == \
        [("mine", "alibi")]
    assert extrapolation_tests(evals, ComparisonRequest(baseline="alibi")).empty and paired_differences(evals, ComparisonRequest(baseline="alibi")).empty
    check_pairs(rows({"alibi": (5.0, 5.1, 0), "mine": (4.9, 5.0, 1)}), ComparisonRequest(("alibi", "mine")))  # no refusal


def test_two_seeds_too_far_apart_say_that_no_third_seed_alone_would_separate_them(tmp_path):
    evals = two_seed_records([1.30, 1.10], [1.0, 1.0])  # a third seed anywhere leaves t(2) too wide
    test = extrapolation_tests(evals, ComparisonRequest(baseline="alibi")).iloc[0]
    assert test["word"] == NOT_SEPARABLE and math.isnan(test["third_lo"]) and math.isnan(test["third_hi"])
    md, _ = render(extrapolation_blocks(pd.DataFrame([test]), 16.0), tmp_path, "t")
    assert "no third seed alone would separate them" in md
