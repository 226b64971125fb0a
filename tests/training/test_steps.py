"""posbench/training/steps.py: one set of step rules says when a run logs, validates, probes and saves,
and the trainer records exactly at the steps the rules name (what a budget branch cuts the trunk's
record by, posbench/jobs/branches.py)."""

import numpy as np
import torch

from posbench.model.transformer import ModelConfig, build_model
from posbench.store.rundir import RunDir
from posbench.training.data import TrainingData
from posbench.training.hooks import Hooks
from posbench.training.steps import StepRules, half_step
from posbench.training.trainer import TrainConfig, train_model

TEXT = np.frombuffer(b"def f(x):\n    return x + 1\n" * 200, dtype=np.uint8)


def test_the_rules_of_a_run_validate_at_half_the_last_and_the_probes_and_every_validation_logs():
    tc = TrainConfig(steps=30, log_every=4, val_every=10, checkpoint_every=15)
    rules = StepRules.of(tc, probes=[7], validate_at=[9])
    assert half_step(30) == 15 and half_step(1) == 1
    got = rules.recorded(30)
    assert got.validates == {7, 9, 10, 15, 20, 30}
    assert got.logs == {4, 8, 12, 16, 20, 24, 28} | got.validates
    assert got.probes == {7}
    assert [s for s in range(1, 31) if rules.saves(s)] == [15]  # not at 30: the run's checkpoint is the last state
    assert rules.last(30) and not rules.last(29)
    assert rules.recorded(12).validates == {7, 9, 10}  # a prefix: what a branch's run has recorded at its branch point


def test_the_trainer_logs_validates_probes_and_snapshots_exactly_at_the_steps_of_its_rules(tmp_path):
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="tiny", d_model=32, n_layers=1, n_heads=2), "rope", {}, 16)
    tc = TrainConfig(steps=21, batch_size=2, warmup_steps=3, log_every=5, val_every=8, val_batches=1, checkpoint_every=6)
    rules = StepRules.of(tc, probes=[3, 11], validate_at=[13], snapshots=[4, 17])
    result = train_model(model, TrainingData(TEXT, TEXT, 16, 0), tc, torch.device("cpu"), rules=rules,
                         hooks=Hooks(resume_dir=RunDir(tmp_path), probe=lambda m: [{"probe": 1.0}],
                                     snapshot_path=lambda k: tmp_path / f"snap{k}.pt"))
    want = rules.recorded(21)
    history = result["history"]
    assert {e["step"] for e in history} == want.logs
    assert {e["step"] for e in history if "val_loss" in e} == want.validates == {3, 8, 10, 11, 13, 16, 21}
    assert [p["step"] for p in result["during_training"]] == [3, 11]
    assert sorted(p.name for p in tmp_path.glob("snap*.pt")) == ["snap17.pt", "snap4.pt"]
    assert torch.load(tmp_path / "snap17.pt", weights_only=False)["next_step"] == 17
    assert torch.load(tmp_path / "resume.pt", weights_only=False)["next_step"] == 18  # the last save step before 21
