"""posbench/report/analysis/tables.py: the main table's intervals (over text and seeds, or seeds alone), verdicts
and Holm-corrected tests, windowed rows kept apart as controls, and lengths not evaluated never
called undefined."""

import math
import shutil

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from posbench.report.analysis.prose import summary_lists, summary_paragraphs
from posbench.report.analysis.tables import (
    comparisons,
    display_table,
    extrapolation_length,
    main_table,
    row_caveats,
    tex_text,
)
from posbench.store.rundir import RunDir
from tests.conftest import cli


def test_not_evaluated_is_not_called_not_defined(sweep, tmp_path):
    """A length evaluated for some runs only is "n/e", and the summary claims nothing about it;
    the learned table past its size stays "n/d"."""
    runs, _, _ = sweep
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    for run_dir in copy.glob("nope_*"):  # as if nope had been evaluated at 1x and 2x only
        m = RunDir(run_dir).read_metrics()
        m["evaluations"] = [r for r in m["evaluations"] if r["multiple"] <= 2]
        RunDir(run_dir).write_metrics(m)
    out = tmp_path / "rep"
    cli("posbench.cli.report", str(copy), "--out", str(out), "--protocols", "nonoverlapping")
    md = (out / "report.md").read_text()
    rows = {line.split("|")[2].strip(): line for line in md.splitlines() if line.startswith("| nonoverlapping")}
    cells = [c.strip() for c in rows["nope"].split("|")]
    # the verdict is read at 2x, the longest multiple every row has (n/d counts: it was evaluated);
    # 4x stays a column, "n/e" for nope
    assert cells[8] == "n/e" and "| 2x/1x " in md and "| 4x/1x" not in md
    learned = [c.strip() for c in rows["learned"].split("|")]
    assert learned[7] == "n/d" and learned[8] == "n/d"  # 2x, 4x: the table has 16 positions
    summary = md.split("## Summary")[1].split("##")[0]
    assert "`nope` 1.00 [" in summary  # nope's verdict kept, at 2x
    assert "Not defined at 2x: `nope`" not in summary and "Not evaluated" not in summary


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
    mean, h = logs.mean(), 4.302653 * logs.std(ddof=1) / math.sqrt(3)  # t(0.975, 2)
    assert table.loc["flat", "1x"] == pytest.approx(math.exp(mean))
    assert (table.loc["flat", "1x_lo"], table.loc["flat", "1x_hi"]) == pytest.approx((math.exp(mean - h), math.exp(mean + h)))
    p_bad = scipy.stats.ttest_rel(np.log([6.0, 6.3, 5.9]), np.log([5.0, 5.2, 4.9])).pvalue  # paired by seed
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


def test_the_ranks_give_rank_1_to_the_lowest_and_tie_rows_equal_as_printed():
    """One seed each (no test can separate two rows): the lowest mean log-perplexity (and 1x
    perplexity) is 1, the worst last; two rows equal at the printed three decimals share 2 and the next is 4 (competition ranks);
    the printed cell carries the rank."""
    evals = fake_evals({"worst": [[9.0, 9.5]], "best": [[5.0, 5.0]], "tie_a": [[6.0, 6.0]], "tie_b": [[6.0001, 6.0001]],
                        "no_value": [[float("nan"), float("nan")]]})
    table = main_table(evals, 0.05).set_index("variant")
    for column in ("rank_mean_log_ppl", "rank_1x"):  # at 1x too, though no test separates two rows with one seed
        ranks = table[column]
        assert ranks[["best", "tie_a", "tie_b", "worst"]].tolist() == [1, 2, 2, 4] and math.isnan(ranks["no_value"])
    shown = display_table(table.reset_index()).set_index("variant")["mean log-ppl (rank over lengths)"]
    assert shown["best"].endswith("(1)") and shown["tie_b"].endswith("(2)") and shown["worst"].endswith("(4)")
    (_, items), = summary_lists(table.reset_index(), 0.05)
    (ranks_item,) = [i for i in items if i.startswith("Rank over lengths")]
    assert "rows equal at the printed three decimals share a rank" in ranks_item
    assert "1. `best`" in ranks_item and "2. `tie_a`" in ranks_item and "2. `tie_b`" in ranks_item and "4. `worst`" in ranks_item


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


def test_the_panel_names_the_stride_its_records_were_scored_with():
    """Sliding windows advance by L/2 by default or by eval.stride: the words come from the records'
    min_context (length - stride), never from the default."""
    from posbench.report.analysis.prose import describe_panel
    from posbench.report.analysis.tables import window_stride

    evals = fake_evals({"a": [[5.0, 5.5], [5.1, 5.6], [4.9, 5.4]], "b": [[6.0, 6.1], [6.1, 6.2], [5.9, 6.0]]})
    assert window_stride(evals) == ""  # records that do not say
    for stride, words in ((None, "sliding windows (stride L/2)"), (2, "sliding windows (stride 2)")):
        sliding = evals.assign(protocol="sliding")
        sliding["min_context"] = sliding["length"] // 2 if stride is None else sliding["length"] - stride
        table = main_table(sliding, 0.05)
        assert f"model m, {words}**" in describe_panel(table, 0.05)
    assert window_stride(evals.assign(min_context=0)) == "L"


def test_a_verdict_names_its_seeds_where_a_seed_has_no_window_control():
    """A seed joined without its window control: the verdict on equal context uses the other seeds,
    and the row says which (it never uses 2 of 3 seeds silently); the summary shows the seed count."""
    evals = fake_evals({"alibi": [[5.0, 5.2], [5.1, 5.3], [4.9, 5.1]],
                        "alibi+swaL": [[5.0, 4.9], [5.1, 5.0]]})  # seed 2 was scored without the control
    evals["windowed"] = evals["variant"].str.endswith("+swaL")
    table = main_table(evals, 0.05).set_index("variant")
    row = table.loc["alibi"]
    assert row["seeds"] == 3 and row["verdict_seeds"] == 2
    assert row["verdict_note"] == "verdict on seeds 0, 1 of 3 (seed 2 without a window control at 2x)"
    text = " ".join(summary_paragraphs(table.reset_index(), 0.05))
    assert "; 2 seeds; verdict on seeds 0, 1 of 3" in text


def test_an_undecided_verdict_on_two_seeds_says_what_a_third_would_need_to_show():
    """Two seeds both broken (2.26, 1.92) read undecided: the seed term's t has 1 degree of freedom.
    The note names the range of a third seed's ratio that would decide it, and a third seed at that
    range's middle does decide it."""
    evals = fake_evals({"rope": [[5.0, 5.0 * 2.26], [5.0, 5.0 * 1.92]], "rope+swaL": [[5.0, 5.2], [5.0, 5.2]]})
    evals["windowed"] = evals["variant"].str.endswith("+swaL")
    row = main_table(evals, 0.05).set_index("variant").loc["rope"]
    assert row["verdict"] == "undecided" and row["equal_ctx_lo"] < 1.3 < row["equal_ctx"]
    note = row["verdict_note"]
    assert note.startswith("2 seeds: the seed term's t has 1 degree of freedom") and note.endswith("would make it broken")
    lo, hi = (float(x) for x in note.split("a third seed reading ")[1].split(" on equal")[0].split(" to "))
    third = (lo * hi) ** 0.5
    three = fake_evals({"rope": [[5.0, 5.0 * 2.26], [5.0, 5.0 * 1.92], [5.0, 5.0 * third]],
                        "rope+swaL": [[5.0, 5.2]] * 3})
    three["windowed"] = three["variant"].str.endswith("+swaL")
    assert main_table(three, 0.05).set_index("variant").loc["rope", "verdict"] == "broken"


def test_the_paper_table_is_booktabs_with_at_most_seven_columns_and_no_control_rows():
    """table_paper.tex: what a two-column paper prints (issue: the full table.tex has 15 columns); the
    cells are the main table's own, a setting column only where the table spans several."""
    from pathlib import Path

    from posbench.report.analysis.tables import PAPER_COLUMNS, paper_table

    results = Path(__file__).parents[3] / "results"
    for name, settings in (("quick", 1), ("map", 5)):
        table = pd.read_csv(results / name / "table.csv")
        tex = paper_table(table, "16x/1x")
        head = next(line for line in tex.splitlines() if line.startswith("encoding"))
        assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
        assert head.count("&") + 1 <= PAPER_COLUMNS and ("setting" in head) == (settings > 1)
        body = tex.split("\\midrule")[1].split("\\bottomrule")[0].strip().splitlines()
        unwindowed = table[~table["windowed"].astype(bool) & (table["protocol"] == table["protocol"].iloc[0])]
        assert len(body) == len(unwindowed) and not any("+swaL" in line for line in body)
    rope = next(line for line in paper_table(pd.read_csv(results / "quick" / "table.csv"), "16x/1x").splitlines()
                if line.startswith("rope "))
    assert "2.46 [2.36, 2.57]" in rope and rope.rstrip(" \\").endswith("broken")


def test_latex_cells_escape_underscores_and_bars():
    # "|" in the default LaTeX font encoding prints as a dash: a model label small|base=500 would read "small—base=500"
    assert tex_text("small|base=500") == "small\\textbar{}base=500"
    assert tex_text("rope_scaling") == "rope\\_scaling"


def test_rows_that_need_a_caveat_get_it_and_only_they():
    """A sink + window row reads its sinks at their true distance, unlike StreamingLLM: its legend says so,
    and points to `+streaming`; a table without such rows has no such sentence."""
    notes = row_caveats(["rope", "rope+swaL", "rope+swaL+sink4", "gated+streaming"])
    assert len(notes) == 1 and "true distance" in notes[0] and "`+streaming`" in notes[0]
    assert row_caveats(["rope", "rope+swaL", "rope+streaming", "sink"]) == []
