"""posbench/report/analysis/task_frames.py: task-accuracy intervals over examples and seeds, runs that never learned
the task, and which depths one window reaches."""

import math

import pandas as pd
import pytest


def test_runs_that_never_learned_the_task_at_train_len_are_named():
    """Accuracy at 1x below halfway from chance to 100% (mean over the grid, the model's own row):
    its 0% at 16x is no evidence about extrapolation, and the report says which runs these are."""
    from posbench.report.analysis.task_frames import not_learned

    rows = []
    for seed, acc in ((0, 0.9), (1, 0.2)):
        for depth in (0.0, 1.0):
            for variant, mult in (("rope", 1.0), ("rope", 4.0), ("rope+logn", 1.0)):
                rows.append({"task": "mqar", "variant": variant, "encoding": "rope", "model": "small", "train_len": 64,
                             "seed": seed, "multiple": mult, "condition": depth, "chance": 0.25,
                             "accuracy": acc if mult == 1.0 else 0.0})
    low = not_learned(pd.DataFrame(rows))
    assert low[["variant", "seed"]].values.tolist() == [["rope", 1]] and low["accuracy"].tolist() == [pytest.approx(0.2)]
    rows = [{**r, "accuracy": 0.6} for r in rows]  # 60% is below halfway from a chance of 25%: (0.25 + 1) / 2
    assert not_learned(pd.DataFrame(rows))["seed"].tolist() == [0, 1]


def test_a_task_counts_where_some_row_reached_90_percent_of_its_ceiling_at_train_len():
    """Per task: the rows whose 1x accuracy (mean over the grid, then over seeds; the model's own row, not
    an evaluation-time row) reaches 90%, best first; a task no row learned does not count."""
    from posbench.report.analysis.task_frames import learned_rows

    rows = []
    for task, per_row in (("mqar", {"rope": (1.0, 0.9), "alibi": (0.95, 0.93), "nope": (0.95, 0.7)}),
                          ("parity_check", {"rope": (0.55, 0.5), "alibi": (0.5, 0.5), "nope": (0.6, 0.5)})):
        for encoding, by_seed in per_row.items():
            for seed, acc in enumerate(by_seed):
                for condition, shift in ((0.0, 0.02), (1.0, -0.02)):  # the grid's mean is the seed's accuracy
                    for variant, mult in ((encoding, 1.0), (encoding, 4.0), (encoding + "+swaL", 1.0)):
                        rows.append({"task": task, "variant": variant, "encoding": encoding, "model": "tiny",
                                     "train_len": 64, "seed": seed, "multiple": mult, "length": int(64 * mult), "condition": condition,
                                     "chance": 0.5, "accuracy": acc + shift if mult == 1.0 and variant == encoding else 1.0})
    got = learned_rows(pd.DataFrame(rows)).set_index("task")
    assert got.loc["mqar", "learned"] == ["rope", "alibi"]  # 0.95 and 0.94 reach 0.9, best first; nope's 0.825 does not
    assert (got.loc["mqar", "best"], got.loc["mqar", "best_accuracy"], got.loc["mqar", "seeds"]) == ("rope", pytest.approx(0.95), 2)
    assert got.loc["mqar", "counts"] and got.loc["mqar", "rows"] == 3
    assert got.loc["parity_check", "learned"] == [] and not got.loc["parity_check", "counts"]  # (+swaL's 100% is not the row's own)
    assert got.loc["parity_check", "best"] == "nope"


def test_a_run_trained_on_random_positions_is_judged_as_it_was_trained():
    """Ruoss et al.'s randomized positions: the run is scored as trained in its +randpos row, and its plain
    row (positions 0..L-1, never seen as one block) may read chance. It learned its task where the +randpos
    row did; a plainly trained run of the same encoding is still judged on its plain row."""
    from posbench.report.analysis.task_frames import learned_rows, not_learned

    rows = []
    for run_id, trained_randpos, plain, randpos in (("a", True, 0.3, 1.0), ("b", True, 0.2, 0.98), ("c", False, 0.4, None)):
        for variant, acc in (("rope", plain), ("rope+randpos", randpos)):
            if acc is not None:
                rows.append({"task": "mqar", "variant": variant, "encoding": "rope", "model": "tiny", "train_len": 64,
                             "seed": {"a": 0, "b": 1, "c": 2}[run_id], "run_id": run_id, "multiple": 1.0, "length": 64,
                             "condition": 4.0, "chance": 0.25, "accuracy": acc})
    frame = pd.DataFrame(rows)
    got = learned_rows(frame).set_index("task")
    assert got.loc["mqar", "learned"] == ["rope+randpos"] and got.loc["mqar", "counts"]
    assert got.loc["mqar", "best_accuracy"] == pytest.approx(0.99)
    low = not_learned(frame)
    assert low[["variant", "seed"]].values.tolist() == [["rope", 2]]  # run c's plain row (40%), not a's or b's
    assert not_learned(frame.drop(columns="run_id"))[["variant", "seed"]].values.tolist() == [["rope", 2]]


def test_a_recurrent_row_meets_the_attention_rows_of_its_task_and_length():
    """A recurrent model has a name of its own (small_gdn beside tiny): its row is judged with the attention
    rows of the same task and train_len, named with its model, so a task the attention rows learned counts."""
    from posbench.report.analysis.task_frames import learned_rows

    rows = [{"task": "mqar", "variant": e, "encoding": e, "model": m, "train_len": 64, "seed": 0, "multiple": 1.0,
             "length": 64, "condition": 4.0, "chance": 0.25, "accuracy": a}
            for e, m, a in (("rope", "tiny", 1.0), ("alibi", "tiny", 0.97), ("nope", "small_gdn", 0.6))]
    got = learned_rows(pd.DataFrame(rows)).set_index("task")
    assert got.loc["mqar", "counts"] and got.loc["mqar", "learned"] == ["rope (tiny)", "alibi (tiny)"]
    assert (got.loc["mqar", "rows"], got.loc["mqar", "models"]) == (3, "small_gdn, tiny")


def test_a_row_just_below_the_bar_is_not_printed_at_it():
    """89.6% falls short of 90%: the table prints one decimal, so its row is not shown at the bar beside "none"."""
    from posbench.report.analysis.task_frames import learned_rows
    from posbench.report.tasks.section import _learned_blocks

    rows = [{"task": "flip_flop", "variant": "rope", "encoding": "rope", "model": "small", "train_len": 64, "seed": s,
             "multiple": 1.0, "length": 64, "condition": None, "chance": 0.5, "accuracy": a}
            for s, a in enumerate((0.90, 0.89, 0.897))]
    text = "\n\n".join(block.md(None) for block in _learned_blocks(learned_rows(pd.DataFrame(rows))))
    assert "`rope` (89.6%, 3)" in text and "**Not counted**: flip_flop (train_len 64)" in text


def test_the_task_report_says_which_depths_one_window_reaches():
    """rope_swa at train_len 64 has a window of 16 keys in every layer: only depth 1 (10 back) is within
    one window; irope has a global layer, so the note does not apply to it."""
    import pandas as pd
    from omegaconf import OmegaConf

    from posbench.report.analysis.task_frames import window_reach

    def cfg(encoding):
        return OmegaConf.create({"encoding": {"name": encoding}, "model": {"name": "small", "d_model": 128, "n_layers": 4,
                                 "n_heads": 4}, "train_len": 64, "task": {"name": "passkey"}})

    runs = pd.DataFrame([{"run_dir": e, "encoding": e, "model": "small", "train_len": 64} for e in ("rope_swa", "irope")])
    reach = window_reach(runs, {"rope_swa": cfg("rope_swa"), "irope": cfg("irope")})
    assert len(reach) == 1 and reach[0]["encoding"] == "rope_swa" and reach[0]["window"] == 16
    assert [c for c, _ in reach[0]["beyond"]] == [0.0, 0.25, 0.5, 0.75] and reach[0]["within"] == [(1.0, 10)]


def test_task_accuracy_intervals_cover_examples_and_seeds():
    """posbench/report/analysis/task_frames.py task_interval: one seed of 64 examples at 50% has the binomial spread
    (about +/- 12 points); all right stays near 1; two seeds that disagree (0% and 100%) span both."""
    from posbench.report.analysis.task_frames import task_interval

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


def test_a_row_trained_for_several_budgets_is_read_at_its_largest():
    """Two cool-down branches of one trunk (train.budgets) are two runs of the same row and seed: the
    table reads the longer, as the perplexity tables read a row at its largest budget, and the shorter's
    records are left out (averaged together, a cell's mean fell outside its own interval). The rule reads
    the runs' steps, not their trunk: a rebuilt report's runs name no trunk and read the same cells, and a
    run of fewer steps that is no branch is left out of its row too; another row at fewer steps stays."""
    from omegaconf import OmegaConf

    from posbench.report.analysis.task_frames import task_frame

    def frame_of(with_trunk: bool):
        runs, configs = [], {}
        for run_id, steps, acc, trunk, seed, model in (("short", 6, 0.3, "t0", 0, "tiny"), ("long", 12, 0.7, "t0", 0, "tiny"),
                                                       ("alone", 6, 0.5, None, 1, "tiny"), ("other", 6, 0.4, None, 0, "small")):
            records = [{"variant": "rope", "task": "parity_check", "length": 64 * m, "multiple": float(m), "condition": None,
                        "example_set": "e", "examples": 64, "exact": acc, "token_accuracy": acc} for m in (1, 2)]
            runs.append({"run_id": run_id, "encoding": "rope", "model": model, "train_len": 64, "seed": seed,
                         "run_dir": f"/runs/{run_id}", "task_evaluations": records, "train_steps": steps,
                         **({"trunk": trunk} if with_trunk else {})})
            configs[f"/runs/{run_id}"] = OmegaConf.create({"task": {"name": "parity_check"}, "train": {"steps": steps}})
        return task_frame(pd.DataFrame(runs), configs)

    for with_trunk in (True, False):
        kept, left = frame_of(with_trunk)
        assert set(kept["run_id"]) == {"long", "other"} and kept.loc[kept["run_id"] == "long", "accuracy"].tolist() == [0.7, 0.7]
        assert set(left["run_id"]) == {"short", "alone"}
