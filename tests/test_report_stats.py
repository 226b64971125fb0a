"""Statistics and summary metrics of the report, against values computed by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from posbench.report.stats import ci95_halfwidth, paired_pvalue
from posbench.report.prose import summary_paragraphs
from posbench.report.tables import display_table, extrapolation_length, main_table


def test_ci95_halfwidth_known_values():
    assert ci95_halfwidth([1.0, 2.0, 3.0]) == pytest.approx(4.302653 * 1.0 / math.sqrt(3), rel=1e-6)  # t(0.975, 2)
    assert math.isnan(ci95_halfwidth([5.0]))


def test_paired_test_uses_the_pairing():
    a = np.array([10.0, 20.0, 30.0, 40.0])
    b = a * np.array([1.05, 1.06, 1.05, 1.06])  # always ~5% worse: unpaired it looks like noise, paired it is clear
    assert paired_pvalue(a, b) < 0.001
    assert paired_pvalue(a, a) == 1.0
    assert math.isnan(paired_pvalue([1.0], [2.0]))


def test_extrapolation_length_stops_at_the_first_length_past_the_tolerance():
    lengths = [64, 128, 256, 512]
    assert extrapolation_length(lengths, [5.0, 5.2, 5.3, 5.1], 0.05) == 128  # 5.3 > 5.25 breaks; 512 is not reached
    assert extrapolation_length(lengths, [5.0, 4.0, 4.0, 5.2], 0.05) == 512
    assert extrapolation_length(lengths, [5.0, float("nan"), 5.0, 5.0], 0.05) == 64


def fake_evals(spec):
    """spec: {variant: [[ppl at 1x, 2x] per seed]} -> evaluation records of completed runs."""
    rows = []
    for variant, seeds in spec.items():
        for seed, ppls in enumerate(seeds):
            for mult, ppl in zip([1.0, 2.0], ppls):
                rows.append(dict(run_id=f"{variant}{seed}", encoding=variant, variant=variant, model="m", train_len=8,
                                 seed=seed, status="completed", protocol="nonoverlapping", length=int(8 * mult),
                                 multiple=mult, ppl=ppl))
    return pd.DataFrame(rows)


def test_main_table_marks_the_best_and_tests_the_others_against_it():
    evals = fake_evals({
        "flat": [[5.0, 5.0], [5.2, 5.1], [4.9, 5.0]],
        "close": [[5.03, 9.0], [5.15, 9.5], [4.95, 8.0]],  # 1x: behind `flat` on two seeds, ahead on one
        "bad": [[6.0, 12.0], [6.3, 13.0], [5.9, 11.0]],  # 1x: clearly behind on every seed
    })
    table = main_table(evals, 0.05).set_index("variant")
    assert table.loc["flat", "1x_best"] and table.loc["flat", "2x_best"]
    assert table.loc["bad", "1x_p_vs_best"] < 0.05
    assert table.loc["close", "1x_p_vs_best"] >= 0.05
    shown = display_table(table.reset_index()).set_index("variant")
    assert shown.loc["flat", "1x"].startswith("**5.03 ± ") and shown.loc["close", "1x"].endswith(" ≈")
    assert not shown.loc["bad", "1x"].endswith("≈")
    assert table.loc["close", "2x/1x"] == pytest.approx(np.mean([9.0 / 5.03, 9.5 / 5.15, 8.0 / 4.95]))
    assert table.loc["flat", "extrapolation_len"] == 16 and table.loc["close", "extrapolation_len"] == 8
    text = " ".join(summary_paragraphs(table.reset_index(), 0.05))
    assert "`flat` stayed within 5% of their 1x perplexity up to 2x (16 tokens)" in text
    assert "`close` at 2x" in text and "`bad` at 2x" in text
    assert "Lowest at 1x: `flat`" in text
