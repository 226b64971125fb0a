"""The training budget as an axis: evaluation during training, convergence flags and the warnings
that keep a ratio from being read without its budget."""

import json
import math

import pandas as pd
import pytest
import torch
from conftest import SWEEP_OVERRIDES, cli

from posbench.evaluation.probes import probe_steps
from posbench.report.budget import last_doubling, spread_warnings, stability, verdict


def _metrics(runs):
    return [json.loads(p.read_text()) for p in sorted(runs.glob("*/metrics.json"))]


def test_last_during_training_point_is_the_final_evaluation(sweep):
    """The probe scores the final evaluation's tokens: its last point is the table's number, bit for bit."""
    runs, _, _ = sweep
    for m in _metrics(runs):
        probes = m["during_training"]
        assert sorted({p["step"] for p in probes}) == [10, 20]  # 0.5 and 1.0 of 20 steps
        assert {p["multiple"] for p in probes} == {1, 4}  # 1x and the longest multiple only
        final = {(r["variant"], r["length"], r["token_set"]): r["ppl"] for r in m["evaluations"]
                 if r["protocol"] == "nonoverlapping"}
        for p in (p for p in probes if p["step"] == 20):
            assert p["protocol"] == "nonoverlapping"
            assert p["ppl"] == final[p["variant"], p["length"], p["token_set"]]
        assert {p["train_tokens"] for p in probes} == {10 * 8 * 16, 20 * 8 * 16}  # steps x batch x train_len


def test_validation_loss_is_measured_at_half_the_budget(sweep):
    runs, _, _ = sweep
    history = json.loads(next(runs.glob("*/history.json")).read_text())
    assert [h["step"] for h in history if "val_loss" in h] == [10, 20]
    assert not math.isnan(last_doubling(pd.DataFrame(history))["change"])


def test_probes_do_not_change_the_weights(tmp_path, text_corpus, cache_dir):
    """Evaluating during training leaves the trained model bit for bit what it is without it."""
    common = [*SWEEP_OVERRIDES, "encoding=alibi", f"data.path={text_corpus}", "train.steps=12"]
    cli("posbench.cli.train", *common, "eval.during_training=[0.25,0.5]", f"runs_dir={tmp_path / 'with'}")
    cli("posbench.cli.train", *common, "eval.during_training=[]", f"runs_dir={tmp_path / 'without'}")
    (a,), (b,) = list((tmp_path / "with").glob("*/checkpoint.pt")), list((tmp_path / "without").glob("*/checkpoint.pt"))
    wa, wb = (torch.load(p, weights_only=True)["model"] for p in (a, b))
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    ma, mb = (json.loads((p.parent / "metrics.json").read_text()) for p in (a, b))
    assert ma["evaluations"] == mb["evaluations"]
    assert [p["step"] for p in ma["during_training"]][::2] == [3, 6] and mb["during_training"] == []


def test_probe_steps_are_fractions_of_the_budget():
    assert probe_steps([0.125, 0.25, 0.5, 1.0], 16000) == [2000, 4000, 8000, 16000]
    assert probe_steps([0.001, 1.0, 1.0], 100) == [1, 100]  # at least step 1, each step once


def test_last_doubling_known_values():
    h = pd.DataFrame({"step": [100, 150, 200, 300], "val_loss": [3.0, 2.5, 2.4, 2.0]})
    d = last_doubling(h)
    assert (d["from_step"], d["to_step"], d["estimated"]) == (150, 300, False)
    assert d["change"] == pytest.approx(0.2)  # (2.5 - 2.0) / 2.5
    # no point at half the budget: the latest before it, scaled to one doubling (log2(300/100))
    d = last_doubling(h[h["step"] != 150])
    assert (d["from_step"], d["estimated"]) == (100, True)
    assert d["change"] == pytest.approx((3.0 - 2.0) / 3.0 / math.log2(3))
    # none before half: the earliest point (200 -> 300 is 0.585 of a doubling)
    d = last_doubling(h[h["step"] >= 200])
    assert d["change"] == pytest.approx((2.4 - 2.0) / 2.4 / math.log2(1.5))
    assert math.isnan(last_doubling(h.iloc[-1:])["change"])
    assert math.isnan(last_doubling(pd.DataFrame({"step": [1], "loss": [2.0]}))["change"])


def test_verdict_classes():
    assert [verdict(r, 0.05) for r in (0.9, 1.05, 1.06, 1.3, 1.31, float("nan"))] == \
        ["flat", "flat", "mild", "mild", "broken", "n/a"]


def test_spread_warning_names_the_extremes_and_ignores_variants():
    table = pd.DataFrame({"protocol": "nonoverlapping", "model": "small", "train_len": 64,
                          "variant": ["rope", "nope", "alibi", "rope+yarn@16x"], "1x": [7.0, 10.0, 7.2, 50.0]})
    (w,) = spread_warnings(table, {"rope", "nope", "alibi"}, 0.10)
    assert "7.00 (`rope`)" in w and "10.00 (`nope`)" in w and "43% apart" in w
    assert spread_warnings(table, {"rope", "alibi"}, 0.10) == []  # 3% apart


def test_stability_detects_a_verdict_that_flips():
    curves = pd.DataFrame({
        "model": "tiny", "train_len": 64, "multiple": 16.0, "train_tokens": 0, "ppl_1x": 5.0, "seeds": 2,
        "encoding": ["nope", "nope", "alibi", "alibi"], "step": [500, 1000, 500, 1000], "ratio": [1.3, 5.6, 0.99, 0.98]})
    wide, (note,) = stability(curves, 0.05)
    assert "verdicts changed for `nope`" in note and "order of the ratios held" in note
    assert wide.set_index("encoding").loc["nope", "step 1000"] == "5.60 broken"


def test_report_shows_the_budget(sweep_report):
    md = (sweep_report / "report.md").read_text()
    assert "**Training budget:** 20 optimiser steps per run" in md
    assert "## Training budget" in md and "during_training.png" in md
    conv = pd.read_csv(sweep_report / "convergence.csv")
    assert len(conv) == 10 and set(conv["from_step"]) == {10} and conv["still_improving"].all()
    curves = pd.read_csv(sweep_report / "during_training.csv")
    assert set(curves["step"]) == {10, 20} and (curves["seeds"] == 2).all()


@pytest.mark.parametrize("value", ["[0]", "[1.5]", "[-0.5]"])
def test_bad_during_training_is_one_line(entry, value):
    status, err = entry("train", f"eval.during_training={value}")
    assert status == 2 and "eval.during_training holds fractions of train.steps in (0, 1]" in err
    assert len(err.strip().splitlines()) == 1
