"""State passing (posbench/training/state_passing.py): an extension run of a recurrent model that
fine-tunes on consecutive windows with the recurrent state passed from one to the next, refused in
one line where there is no state to pass, and resumed bit for bit (the carried state is saved)."""

import numpy as np
import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.jobs.train import run
from posbench.mixers import Mixer
from posbench.model.transformer import ModelConfig, build_model
from posbench.store.rundir import RunDir
from posbench.tasks.lm import LanguageModelling
from posbench.training import extend, state_passing
from posbench.training.data import VALIDATION_SEED, TrainingData
from posbench.training.hooks import Hooks
from posbench.training.trainer import TrainConfig, train_model

BASE = ["model=tiny", "model.mixers=[gdn]", "encoding=nope", "train=smoke", "train_len=16",
        "eval.protocols=[nonoverlapping]", "eval.multiples=[1,4]", "eval.scored_tokens=256", "data=local"]
TEXT = np.random.default_rng(0).integers(0, 256, 20_000).astype(np.uint8)


def test_an_extension_run_fine_tunes_on_a_stream_with_the_state_passed(compose, tmp_path, text_corpus):
    args = [*BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    spec = compose(*args, "extend.length=64", "extend.method=state_passing", "extend.steps=4", "extend.lr=1e-3")
    assert extend.finetune_window(spec.extend, 16) == 16 and state_passing.segments(spec.extend.length, 16) == 4
    task = extend.extension_task(spec.extend, 16, LanguageModelling())
    x0, x1 = task.training_batch(TEXT, 2, 16, 0, 0)[0], task.training_batch(TEXT, 2, 16, 0, 1)[0]
    assert torch.equal(torch.from_numpy(TEXT.astype(np.int64))[_starts(x0, 2) + 16], x1[:, 0])  # consecutive
    plain = LanguageModelling().training_batch(TEXT, 2, 16, VALIDATION_SEED, 3)
    assert torch.equal(task.training_batch(TEXT, 2, 16, VALIDATION_SEED, 3)[0], plain[0])  # validation as always
    child = RunDir(run(spec)).read_metrics()  # trains the parent first
    assert child["status"] == "completed" and child["train_tokens"] == 4 * 8 * 16
    assert {r["variant"] for r in child["evaluations"]} == {"nope+state_passing@4x+ft4"}


def _starts(x, n):
    """Where each row of x starts in TEXT (found by matching its first n tokens)."""
    t = torch.from_numpy(TEXT.astype(np.int64))
    windows = t.unfold(0, n, 1)
    return torch.tensor([int(torch.nonzero((windows == row[:n]).all(1))[0]) for row in x])


@pytest.mark.parametrize("model,line", [(["model.mixers=[attention]"], "has none"),
                                        (["extend.length=16"], "continued-training control")])
def test_state_passing_without_a_state_or_a_stretch_is_one_line(compose, tmp_path, model, line):
    with pytest.raises(PosbenchError, match=line):
        compose(*BASE, f"runs_dir={tmp_path}", "extend.length=64", "extend.method=state_passing", *model)


def _train(resume_dir, steps=12):
    torch.manual_seed(0)
    model = build_model(ModelConfig(name="t", d_model=32, n_layers=2, n_heads=2, mixers=["gdn", "attention"],
                                    mixer_params={"gdn": {"chunk": 8}}), "nope", {}, 16)
    for m in model.modules():
        if isinstance(m, Mixer):
            m.carry.start(4)
    tc = TrainConfig(steps=steps, batch_size=2, warmup_steps=2, log_every=4, val_every=100, val_batches=1,
                     checkpoint_every=5)
    task = state_passing.StreamedLanguageModelling(LanguageModelling.Params(), 4)
    train_model(model, TrainingData(TEXT, TEXT, 16, 0, task), tc, torch.device("cpu"), hooks=Hooks(resume_dir=RunDir(resume_dir)))
    return model


def test_a_resumed_state_passing_run_is_bit_identical(tmp_path):
    clean = _train(tmp_path)  # leaves its resume state of step 10, mid-stretch (10 mod 4 = 2)
    resumed = _train(tmp_path)  # restores step 10 with the carried state, trains steps 10 and 11
    carry = next(m.carry for m in resumed.modules() if isinstance(m, Mixer))
    assert carry.count == 12
    a, b = clean.state_dict(), resumed.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a if not k.endswith("_extra_state"))
    extra = [k for k in a if k.endswith("_extra_state")]
    assert extra and all(torch.equal(s, t) for k in extra for s, t in zip(a[k]["state"], b[k]["state"]))
