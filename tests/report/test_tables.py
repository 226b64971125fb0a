"""Statistics and summary metrics of the report, against values computed by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from posbench.report.prose import summary_paragraphs
from posbench.report.stats import ci95_halfwidth, paired_pvalue
from posbench.report.tables import (
    comparisons,
    display_table,
    extrapolation_length,
    main_table,
)


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
                                 multiple=mult, ppl=ppl, token_set="t"))
    return pd.DataFrame(rows)


def test_without_per_document_losses_the_table_falls_back_to_seeds_and_holm_corrects_the_tests():
    evals = fake_evals({
        "flat": [[5.0, 5.0], [5.2, 5.15], [4.9, 4.9]],
        "close": [[5.03, 9.0], [5.15, 9.5], [4.95, 8.0]],  # 1x: behind `flat` on two seeds, ahead on one
        "bad": [[6.0, 12.0], [6.3, 13.0], [5.9, 11.0]],  # 1x: clearly behind on every seed
    })
    table = main_table(evals, 0.05).set_index("variant")
    assert set(table["interval"]) == {"seeds only"}
    assert table.loc["flat", "1x_best"] and table.loc["flat", "2x_best"]
    # the geometric mean over seeds with the t-interval of the mean log-perplexity
    logs = np.log([5.0, 5.2, 4.9])
    mean, h = logs.mean(), ci95_halfwidth(logs)
    assert table.loc["flat", "1x"] == pytest.approx(math.exp(mean))
    assert (table.loc["flat", "1x_lo"], table.loc["flat", "1x_hi"]) == pytest.approx((math.exp(mean - h), math.exp(mean + h)))
    p_bad = paired_pvalue([6.0, 6.3, 5.9], [5.0, 5.2, 4.9])
    assert table.loc["bad", "1x_p_vs_best"] == pytest.approx(p_bad)
    # Holm over the panel's 4 comparisons (close and bad, at 1x and 2x): the smallest p times 4, ...
    ps = sorted(table[["1x_p_vs_best", "2x_p_vs_best"]].stack().tolist())
    assert table[["1x_p_holm", "2x_p_holm"]].stack().min() == pytest.approx(min(1, 4 * ps[0]))
    assert table.loc["close", "1x_p_vs_best"] >= 0.05
    shown = display_table(table.reset_index()).set_index("variant")
    assert shown.loc["flat", "1x"].startswith("**5.03 [") and shown.loc["close", "1x"].endswith(" ≈")
    assert table.loc["close", "2x/1x"] == pytest.approx(math.exp(np.mean(np.log([9.0 / 5.03, 9.5 / 5.15, 8.0 / 4.95]))))
    assert table.loc["flat", "extrapolation_len"] == 16 and table.loc["close", "extrapolation_len"] == 8
    assert table.loc["flat", "verdict"] == "flat" and table.loc["bad", "verdict"] == "broken"
    pairs = comparisons(table.reset_index())
    assert len(pairs) == 4 and pairs["correction"].str.startswith("Holm over the 4 comparisons").all()


def doc_evals(spec, docs=40, seeds=3, spread=0.3, seed=0):
    """Records with per-document losses: spec {variant: (loss at 1x, loss at 2x)} in nats per
    token; each document's loss varies by ``spread`` around it (the same documents for every row,
    as in a real token set), each seed adds a small shift."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(50, 150, size=docs)
    doc_effect = rng.normal(0, spread, size=docs)
    longer = rng.normal(0, 0.05, size=docs)  # how much harder each document gets at 2x: the ratio depends on the text
    longer -= (longer * tokens).sum() / tokens.sum()  # ... with no effect on the whole token set
    rows = []
    for variant, losses in spec.items():
        for s in range(seeds):
            shift = rng.normal(0, 0.01)
            for mult, loss in zip([1.0, 2.0], losses):
                nats = (loss + shift + doc_effect + (mult > 1) * longer) * tokens
                mean = nats.sum() / tokens.sum()
                rows.append(dict(run_id=f"{variant}{s}", encoding=variant, variant=variant, model="m", train_len=8,
                                 seed=s, status="completed", protocol="nonoverlapping", length=int(8 * mult),
                                 multiple=mult, ppl=math.exp(mean), loss=mean, token_set="t", doc_nats=nats.tolist()))
    return pd.DataFrame(rows), {"t": {"doc_tokens": tokens.tolist()}}


def test_intervals_cover_the_text_and_a_straddling_interval_reads_undecided():
    """A row whose 2x/1x interval crosses the flat/mild border (1.05) is "undecided", never flat or mild;
    the intervals over text are wider than the spread of seeds alone."""
    evals, sets = doc_evals({"border": (1.0, 1.0 + math.log(1.05)), "clear": (1.0, 1.0 + math.log(1.6)),
                             "flat": (1.0, 1.0 + math.log(0.9))})
    table = main_table(evals, 0.05, sets, replicates=400).set_index("variant")
    assert set(table["interval"]) == {"text and seeds"}
    lo, hi = table.loc["border", "2x/1x_lo"], table.loc["border", "2x/1x_hi"]
    assert lo < 1.05 < hi and table.loc["border", "verdict"] == "undecided"
    assert table.loc["clear", "verdict"] == "broken" and table.loc["flat", "verdict"] == "flat"
    seed_only = main_table(evals.drop(columns="doc_nats"), 0.05).set_index("variant")
    assert (table["1x_hi"] - table["1x_lo"]).min() > (seed_only["1x_hi"] - seed_only["1x_lo"]).max()
    text = " ".join(summary_paragraphs(table.reset_index(), 0.05))
    assert "**undecided** (interval across a border): `border`" in text and "**broken**" in text


def test_interval_verdict_classes():
    from posbench.report.budget import interval_verdict

    assert interval_verdict(0.97, 1.04, 1.0, 0.05) == "flat"
    assert interval_verdict(1.06, 1.29, 1.1, 0.05) == "mild"
    assert interval_verdict(1.31, 2.0, 1.5, 0.05) == "broken"
    assert interval_verdict(1.01, 1.07, 1.04, 0.05) == "undecided"
    assert interval_verdict(1.25, 1.35, 1.3, 0.05) == "undecided"
    assert interval_verdict(float("nan"), float("nan"), 1.02, 0.05) == "flat, no interval"


def test_holm_matches_the_step_down_definition():
    from posbench.report.bootstrap import holm

    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert math.isnan(holm([float("nan"), 0.2])[0]) and holm([float("nan"), 0.2])[1] == pytest.approx(0.2)


def test_bootstrap_p_resolves_what_a_large_panel_needs():
    """The percentile p (with Davison and Hinkley's +1) where the replicates resolve it; beyond them
    the normal tail, so that a difference far outside every replicate survives Holm over 135
    comparisons (the modern panel), which 2 / (B + 1) = 0.001 never could."""
    from scipy.stats import norm

    from posbench.report.bootstrap import bootstrap_p, holm

    rng = np.random.default_rng(0)
    near = rng.normal(0.1, 0.1, 2000)  # about 16% of the replicates cross zero
    assert bootstrap_p(near) == pytest.approx(2 * ((near <= 0).sum() + 1) / 2001)
    far = rng.normal(0.5, 0.1, 2000)  # 5 standard errors: no replicate crosses zero
    assert (far <= 0).sum() == 0
    assert bootstrap_p(far) == pytest.approx(2 * norm.sf(far.mean() / far.std(ddof=1)))
    assert holm([bootstrap_p(far)] + [0.5] * 134)[0] < 0.05
    assert holm([2 / 2001] + [0.5] * 134)[0] > 0.05  # what the percentile p alone allowed
    assert bootstrap_p(np.zeros(10)) == 1.0 and math.isnan(bootstrap_p(np.array([np.nan])))


def test_windowed_rows_are_controls_apart_from_the_verdicts_and_the_comparisons():
    """A row scored with an evaluation-time window (+bca) is never the best of a column, never in
    the comparisons, and the summary lists it after the verdicts as a control."""
    evals = fake_evals({"rope": [[5.0, 9.0], [5.1, 9.4], [4.9, 8.8]],
                        "rope+bca": [[4.8, 4.8], [4.9, 4.9], [4.7, 4.7]],  # flat and lowest, thanks to the window
                        "alibi": [[5.5, 5.5], [5.6, 5.6], [5.4, 5.5]]})
    evals["windowed"] = evals["variant"].str.endswith("+bca")
    table = main_table(evals, 0.05).set_index("variant")
    assert not table.loc["rope+bca", "1x_best"] and table.loc["rope", "1x_best"]
    assert pd.isna(table.loc["rope+bca", "1x_p_vs_best"]) and pd.notna(table.loc["alibi", "1x_p_vs_best"])
    pairs = comparisons(table.reset_index())
    assert "rope+bca" not in set(pairs["a"]) | set(pairs["b (best)"]) and len(pairs) == 2
    text = " ".join(summary_paragraphs(table.reset_index(), 0.05))
    verdicts, controls = text.split("Windowed controls")
    assert "`rope+bca`" not in verdicts and "`rope+bca` 1.00" in controls


def test_task_accuracy_intervals_cover_examples_and_seeds():
    """posbench/report/tasks.py task_interval: one seed of 64 examples at 50% has the binomial spread
    (about +/- 12 points); all right stays near 1; two seeds that disagree (0% and 100%) span both."""
    from posbench.report.tasks import task_interval

    def cell(rows):
        return pd.DataFrame([{"seed": s, "condition": c, "accuracy": a, "examples": n} for s, c, a, n in rows])

    one = task_interval(cell([(0, 0.5, 0.5, 64)]))
    assert one == pytest.approx([0.5 - 1.96 * math.sqrt(0.25 / 64), 0.5 + 1.96 * math.sqrt(0.25 / 64)], abs=0.03)
    # all right: the interval reaches 1 and stays close to it (the shrunk binomial spread of 64 examples)
    lo_all, hi_all = task_interval(cell([(0, 0.0, 1.0, 64), (1, 0.0, 1.0, 64)]))
    assert hi_all == 1.0 and 0.95 < lo_all < 1.0
    lo, hi = task_interval(cell([(0, 0.0, 0.0, 64), (1, 0.0, 1.0, 64)]))
    assert lo == 0.0 and hi == 1.0
    # five conditions of 64 examples each: the mean over conditions is tighter than one condition
    lo5, hi5 = task_interval(cell([(0, d, 0.5, 64) for d in (0.0, 0.25, 0.5, 0.75, 1.0)]))
    assert hi5 - lo5 < 0.6 * (one[1] - one[0]) and lo5 < 0.5 < hi5
    assert all(math.isnan(v) for v in task_interval(cell([(0, 0.0, 0.5, 0)])))  # nothing scored: no interval


def test_the_panel_names_the_stride_its_records_were_scored_with():
    """Sliding windows advance by L/2 by default or by eval.stride: the words come from the records'
    min_context (length - stride), never from the default."""
    from posbench.report.prose import describe_panel
    from posbench.report.tables import window_stride

    evals = fake_evals({"a": [[5.0, 5.5], [5.1, 5.6], [4.9, 5.4]], "b": [[6.0, 6.1], [6.1, 6.2], [5.9, 6.0]]})
    assert window_stride(evals) == ""  # records that do not say
    for stride, words in ((None, "sliding windows (stride L/2)"), (2, "sliding windows (stride 2)")):
        sliding = evals.assign(protocol="sliding")
        sliding["min_context"] = sliding["length"] // 2 if stride is None else sliding["length"] - stride
        table = main_table(sliding, 0.05)
        assert f"model m, {words}**" in describe_panel(table, 0.05)
    assert window_stride(evals.assign(min_context=0)) == "L"


def test_comparisons_pair_rows_by_seed_id():
    """Two rows of a panel are compared on the seeds both have, by id: where a row lacks a seed (a
    run not finished), the shared seeds pair with each other, not with a neighbour's slot."""
    from posbench.report import bootstrap

    log_ppl = {("full", 0): 1.0, ("full", 1): 2.0, ("full", 2): 3.0, ("gap", 0): 1.1, ("gap", 2): 3.1}
    records = pd.DataFrame([{"variant": v, "run_id": f"{v}{s}", "seed": s, "multiple": 1.0, "ppl": float(np.exp(x)),
                             "token_set": "t", "doc_nats": [10 * x, 10 * x]} for (v, s), x in log_ppl.items()])
    doc_tokens, draws = bootstrap.panel_text(records, {"t": {"doc_tokens": [10, 10]}}, replicates=400)
    cells = {v: bootstrap.cell_replicates(g, [1.0], doc_tokens, draws) for v, g in records.groupby("variant")}
    result = bootstrap.compare(cells["gap"], cells["full"], 0)
    assert result.seeds == 2  # seeds 0 and 2; the differences are exactly 0.1 on both: no spread, p = 0
    assert result.p == 0.0 and result.test == bootstrap.SEED_T
    ratio = bootstrap.pair_ratio_stats(cells["gap"], cells["full"], 0)
    assert ratio == pytest.approx((math.exp(0.1),) * 3)


def test_p_values_below_what_the_data_could_show_are_written_as_a_bound():
    from posbench.report.stats import format_p, p_phrase

    assert format_p(4.8e-248) == "< 0.001" and format_p(0.0) == "< 0.001" and p_phrase(1e-9) == "< 0.001"
    assert format_p(0.04213) == "0.042" and p_phrase(0.29) == "= 0.29" and p_phrase(0.4812, 3) == "= 0.481"
    assert format_p(float("nan")) == ""
