"""posbench/training/trainer.py: batches depend only on the seed and the step, training and validation
use the task's loss, and bf16 training on a GPU learns and stays finite (marked ``cuda``)."""

import numpy as np
import pytest
import torch

from posbench.core.device import autocast, resolve_device
from posbench.model.transformer import ModelConfig, build_model
from posbench.tasks import build_task
from posbench.training.trainer import TrainConfig, train_model

SMALL = ModelConfig(name="t", d_model=64, n_layers=2, n_heads=4, mlp_ratio=2)


@pytest.mark.cuda
@pytest.mark.parametrize("encoding", ["nope", "rope", "alibi", "shaw", "fire", "fox", "cope", "sink", "ssmax", "gated",
                                      "stickbreaking"])
def test_bf16_training_learns_and_stays_finite(encoding):
    device = resolve_device("cuda")
    torch.manual_seed(0)
    model = build_model(SMALL, encoding, {}, 64, 64).to(device)
    tokens = np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 2000, dtype=np.uint8)
    tc = TrainConfig(steps=60, batch_size=16, warmup_steps=5, log_every=10, val_every=60, val_batches=2)
    result = train_model(model, tokens, tokens[:5000], tc, 64, 0, device)
    assert result["status"] == "completed"
    assert result["final_val_loss"] < 2.0  # a repeated sentence is learned fast from ln(256) = 5.5
    with torch.no_grad(), autocast(device):
        assert model(torch.randint(0, 256, (2, 64), device=device)).dtype == torch.bfloat16


TEXT = np.frombuffer(b"def f(x):\n    return x + 1\n" * 200, dtype=np.uint8)


def test_batches_depend_only_on_the_seed_and_step():
    from posbench.training.trainer import training_batch

    task = build_task("passkey")
    a = training_batch(TEXT, 4, 32, seed=5, step=7, task=task)
    b = training_batch(TEXT, 4, 32, seed=5, step=7, task=task)
    c = training_batch(TEXT, 4, 32, seed=5, step=8, task=task)
    assert all(torch.equal(x, y) for x, y in zip(a, b)) and not torch.equal(a[0], c[0])


@pytest.mark.parametrize("task_name, mixed", [("passkey", True), ("mqar", False)])
def test_training_and_validation_use_the_task_loss(monkeypatch, task_name, mixed):

    import posbench.tasks.base as task_base
    import posbench.training.trainer as trainer
    from posbench.model.transformer import ModelConfig, build_model
    from posbench.training.trainer import TrainConfig

    seen, real = [], task_base.token_loss
    monkeypatch.setattr(task_base, "token_loss", lambda logits, y, scored, m=False: seen.append(m) or real(logits, y, scored, m))
    model = build_model(ModelConfig(name="tiny", d_model=32, n_layers=1, n_heads=2), "nope", {}, 32)
    tc = (TrainConfig(steps=2, batch_size=2, warmup_steps=1, val_batches=1, checkpoint_every=10**6))
    trainer.train_model(model, TEXT, TEXT, tc, 32, 0, torch.device("cpu"), task=build_task(task_name))
    assert len(seen) > 2 and set(seen) == {mixed}  # the training steps and the validation points
