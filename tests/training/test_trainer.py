"""posbench/training/trainer.py: batches depend only on the seed and the step, training and validation
use the task's loss, and bf16 training on a GPU learns and stays finite (marked ``cuda``)."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from posbench.core.device import autocast, resolve_device
from posbench.model.transformer import ModelConfig, build_model
from posbench.store.rundir import RunDir
from posbench.tasks import build_task
from posbench.training.data import TrainingData
from posbench.training.hooks import Hooks
from posbench.training.steps import StepRules
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
    result = train_model(model, TrainingData(tokens, tokens[:5000], 64, 0), tc, device)
    assert result["status"] == "completed"
    assert result["final_val_loss"] < 2.0  # a repeated sentence is learned fast from ln(256) = 5.5
    with torch.no_grad(), autocast(device):
        assert model(torch.randint(0, 256, (2, 64), device=device)).dtype == torch.bfloat16


@pytest.mark.cuda
@pytest.mark.parametrize("encoding, mixer", [("tape", "attention"), ("comrope", "attention"), ("cable", "attention"),
                                             ("nope", "gdn"), ("nope", "deltaproduct"), ("nope", "mamba2"),
                                             ("nope", "mamba3")])
def test_the_newer_rows_train_in_bf16_on_a_gpu(encoding, mixer):
    """The encodings and recurrent mixers added after the first GPU check (TAPE, ComRoPE, CABLE; Gated
    DeltaNet, DeltaProduct, Mamba-2, Mamba-3 in every layer) learn a repeated sentence under bf16
    autocast on CUDA, as the attention rows above do."""
    device = resolve_device("cuda")
    torch.manual_seed(0)
    model = build_model(replace(SMALL, mixers=[mixer]), encoding, {}, 64, 64).to(device)
    tokens = np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 2000, dtype=np.uint8)
    tc = TrainConfig(steps=60, batch_size=16, warmup_steps=5, log_every=10, val_every=60, val_batches=2)
    # the projections inside each token mixer (the attention or the recurrence; not the MLP, which autocast
    # reaches anyway) run in bf16 during training, whatever the recurrence keeps in fp32 for its state: a
    # finite loss alone would pass a mixer that casts its input up to fp32 and runs its projections there
    seen = set()
    mixers = [getattr(block, "mixer", None) or block.attn for block in model.blocks]
    hooks = [m.register_forward_hook(lambda _m, _i, out: seen.add(out.dtype))
             for mixer in mixers for m in mixer.modules() if isinstance(m, torch.nn.Linear)]
    assert hooks
    result = train_model(model, TrainingData(tokens, tokens[:5000], 64, 0), tc, device)
    for h in hooks:
        h.remove()
    assert seen == {torch.bfloat16}, seen
    assert result["status"] == "completed"
    assert result["final_val_loss"] < 2.0
    with torch.no_grad(), autocast(device):
        assert torch.isfinite(model(torch.randint(0, 256, (2, 1024), device=device)).float()).all()  # 16x train_len


def compiled_and_eager_losses(device_name: str, encoding: str) -> tuple[list, list, torch.nn.Module]:
    device, tokens = resolve_device(device_name), np.frombuffer(b"the quick brown fox jumps over the lazy dog. " * 500, dtype=np.uint8)
    tc = TrainConfig(steps=4, batch_size=4, warmup_steps=1, log_every=1, val_every=10**9, val_batches=1)
    losses = []
    for compile in (True, False):
        torch.manual_seed(0)
        model = build_model(SMALL, encoding, {}, 32, 32).to(device)
        result = train_model(model, TrainingData(tokens, tokens[:2000], 32, 0), tc, device, compile=compile)
        losses.append([h["loss"] for h in result["history"]])
        if compile:
            compiled_model = model
    return *losses, compiled_model


@pytest.mark.cuda
@pytest.mark.parametrize("encoding", ["rope", "t5", "fox"])
def test_regional_compilation_trains_as_eager_does_on_a_gpu(encoding):
    """compile=true (each block compiled in place, fused AdamW) follows the eager run's
    losses step by step, and leaves the model eager for evaluation."""
    compiled, eager, model = compiled_and_eager_losses("cuda", encoding)
    assert compiled == pytest.approx(eager, rel=2e-2)  # bf16: the compiled kernels round differently
    assert all(block._compiled_call_impl is None for block in model.blocks)


@pytest.mark.slow  # the CPU compiler takes tens of seconds
def test_regional_compilation_trains_as_eager_does_on_cpu():
    compiled, eager, model = compiled_and_eager_losses("cpu", "rope")
    assert compiled == pytest.approx(eager, rel=1e-4)
    assert all(block._compiled_call_impl is None for block in model.blocks)


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
    trainer.train_model(model, TrainingData(TEXT, TEXT, 32, 0, build_task(task_name)), tc, torch.device("cpu"))
    assert len(seen) > 2 and set(seen) == {mixed}  # the training steps and the validation points


# -- a Ctrl-C or SIGTERM is answered at the step boundary with a resume state at that step ----------


def _train(tmp_path, probe=None, probe_steps=()):
    """A tiny run of 30 steps (no periodic resume state before step 100), resuming from ``tmp_path``."""
    from posbench.model.transformer import ModelConfig

    torch.manual_seed(0)
    model = build_model(ModelConfig(name="tiny", d_model=32, n_layers=1, n_heads=2), "rope", {}, 16)
    tc = TrainConfig(steps=30, batch_size=2, warmup_steps=3, log_every=4, val_every=10, val_batches=1, checkpoint_every=100)
    result = train_model(model, TrainingData(TEXT, TEXT, 16, 0), tc, torch.device("cpu"),
                         rules=StepRules.of(tc, probe_steps), hooks=Hooks(resume_dir=RunDir(tmp_path), probe=probe))
    return model, result


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_a_signal_saves_a_resume_state_at_the_current_step_and_the_resumed_run_is_bit_identical(tmp_path, signum):
    """A real signal, sent to this process during step 13: the loop finishes the step, writes a resume
    state with next_step 13 and stops with the line naming it; the same call resumes there and ends with
    the weights and history of a run never interrupted; a second signal stops at once."""
    import os
    import signal

    from posbench.core.errors import Interrupted

    sig = getattr(signal, signum)
    before = signal.getsignal(sig)

    def send(n):
        def probe(model):
            for _ in range(n):
                os.kill(os.getpid(), sig)  # delivered here, in the main thread, inside the step
            return [{"probe": 1.0}]
        return probe

    clean, result = _train(tmp_path / "clean", send(0), {13})
    with pytest.raises(Interrupted) as stopped:
        _train(tmp_path / "run", send(1), {13})
    assert stopped.value.exit_status == 128 + sig
    assert stopped.value.line == (f"posbench: interrupted ({signum}) after step 13 of 30 (train); resume state saved; "
                                  "run the same command again to resume from step 13")
    assert RunDir(tmp_path / "run").load_resume(30)["next_step"] == 13
    assert signal.getsignal(sig) == before  # the handler before training is back
    resumed, again = _train(tmp_path / "run", send(1), {13})  # step 13 is done: no signal comes
    assert all(torch.equal(a, b) for a, b in zip(clean.state_dict().values(), resumed.state_dict().values()))
    strip = lambda h: [{k: v for k, v in e.items() if k != "tokens_per_s"} for e in h]  # noqa: E731
    assert strip(result["history"]) == strip(again["history"]) and result["during_training"] == again["during_training"]

    with pytest.raises(Interrupted) as twice:  # a second signal: at once, inside the step, nothing saved
        _train(tmp_path / "twice", send(2), {13})
    assert "interrupted again" in twice.value.line and RunDir(tmp_path / "twice").load_resume(30) is None
