"""Evaluation during training (posbench/evaluation/probes.py): probes at fractions of the budget that
change no weight, the last point is the final evaluation, and bad settings are one line."""

import json
import math

import pandas as pd
import pytest
import torch

from posbench.evaluation.probes import probe_steps
from posbench.report.analysis.convergence import last_doubling
from tests.conftest import SWEEP_OVERRIDES, cli


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


@pytest.mark.parametrize("value", ["[0]", "[1.5]", "[-0.5]"])
def test_bad_during_training_is_one_line(entry, value):
    status, err = entry("train", f"eval.during_training={value}")
    assert status == 2 and "eval.during_training holds fractions of train.steps in (0, 1]" in err
    assert len(err.strip().splitlines()) == 1
