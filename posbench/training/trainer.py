"""The training loop: a model, its data and the ``train`` settings in; status and history out.

It knows nothing of Hydra or of the run directory's layout beyond the resume state it is handed
(posbench.store.resume saves and loads it), so the benchmark and tests call it directly.

AdamW (matrices decayed; norms, biases and the encoding's position parameters not), linear warm-up
then cosine decay to ``min_lr_ratio`` or warmup-stable-decay (posbench/training/schedules.py), gradient clipping, and a resume state every
``checkpoint_every`` steps from which a killed run continues bit for bit: batches depend only on
(seed, step), so nothing of a data loader needs saving. A Ctrl-C or SIGTERM is answered after the
current step with a resume state at that step (posbench/core/interrupts.py), so it loses no work.

Validation loss is measured every ``val_every`` steps, at the last step and at half of the budget
(so that every run shows how much its 1x loss still changed over its last doubling of steps). A
``probe`` (posbench.jobs.train builds one from ``eval.during_training``) is called at chosen steps
with the model in eval mode; its records are kept, resumed and returned as ``during_training``.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, List, Mapping, Optional

import numpy as np
import torch

from posbench.attention.options import AttentionOptions
from posbench.attention.positions import sample_positions
from posbench.core.cpu_share import SlowdownWatch, check_threads_at_start
from posbench.core.device import autocast
from posbench.core.errors import Interrupted, PosbenchError
from posbench.core.files import atomic_torch_save
from posbench.core.interrupts import defer, stop_at_step_boundary
from posbench.core.progress import progress
from posbench.core.settings import check_count
from posbench.core.tracking import Tracker
from posbench.store.resume import discard_resume, load_resume, resume_state, save_resume
from posbench.tasks import Task
from posbench.tasks.lm import LanguageModelling
from posbench.training.schedules import COOLDOWN_SHAPES, SCHEDULES, cooldown_start
from posbench.training.schedules import (
    lr_factor as lr_factor,  # the schedules' one entry, re-exported for callers
)

log = logging.getLogger("posbench")
VALIDATION_SEED = 20_240_229


@dataclass(frozen=True)
class TrainConfig:
    """How a run trains (``train=`` in conf/train/: default, smoke)."""

    steps: int = 600
    batch_size: int = 32
    lr: float = 2e-3
    # cosine: warm-up, cosine decay to lr x min_lr_ratio; wsd: warm-up, constant, cool-down to 0
    # over the last `cooldown` fraction of the steps (posbench/training/schedules.py)
    schedule: str = "cosine"
    min_lr_ratio: float = 0.1  # cosine: final lr = lr x min_lr_ratio (wsd cools down to 0)
    cooldown: float = 0.2  # wsd: fraction of the steps in the cool-down
    cooldown_shape: str = "linear"  # wsd: linear | 1-sqrt
    # wsd: train one trunk and a cool-down branch per budget (steps, increasing); each branch is the run
    # of `steps` = its budget, bit for bit (posbench/jobs/branches.py); train.steps is then not used
    budgets: List[int] = field(default_factory=list)
    warmup_steps: int = 50
    weight_decay: float = 0.1  # matrices only; norms, biases and position parameters are not decayed
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    # Ruoss et al. 2023: train on sorted positions sampled from [0, random_positions) instead of
    # 0..train_len-1 (None: off). Works with every encoding that reads the position tensor.
    random_positions: Optional[int] = None
    val_every: int = 200  # steps between validation losses (and at the last step)
    checkpoint_every: int = 100  # steps between resume states (a killed run continues from the last)
    val_batches: int = 8
    log_every: int = 10

    def check(self, train_len: int) -> None:
        rp = self.random_positions
        if rp is not None and rp < train_len:
            raise PosbenchError(f"train.random_positions={rp} must be at least train_len={train_len} (or null)")
        for key in ("steps", "batch_size", "val_every", "val_batches", "log_every", "checkpoint_every"):
            if getattr(self, key) < 1:
                raise PosbenchError(f"train.{key} must be a positive integer, got {getattr(self, key)}")
        for key in ("lr", "grad_clip"):
            if not getattr(self, key) > 0:
                raise PosbenchError(f"train.{key} must be positive, got {getattr(self, key):g}")
        for key, ok, what in (("warmup_steps", self.warmup_steps >= 0, ">= 0"), ("weight_decay", self.weight_decay >= 0, ">= 0"),
                              ("min_lr_ratio", 0 <= self.min_lr_ratio <= 1, "in [0, 1]")):
            if not ok:
                raise PosbenchError(f"train.{key}={getattr(self, key)} is out of range (warmup_steps, weight_decay >= 0; "
                                    "min_lr_ratio in [0, 1])")
        for key in ("beta1", "beta2"):
            if not 0 <= getattr(self, key) < 1:
                raise PosbenchError(f"train.{key} must be in [0, 1), got {getattr(self, key)}")
        self.check_schedule()
        check_count("train.batch_size", self.batch_size, train_len, f"train.batch_size x train_len={train_len} (a step's tokens)")
        steps_key, steps = ("train.budgets", list(self.budgets)) if self.budgets else ("train.steps", self.steps)
        check_count(steps_key, steps, self.batch_size * train_len,
                    f"{'each budget' if self.budgets else 'train.steps'} x train.batch_size={self.batch_size} x "
                    f"train_len={train_len} (the training tokens)")

    def check_schedule(self) -> None:
        """The schedule's name and shape, and (wsd) that every cool-down starts after the warm-up
        and is at least one step long, for the run and for each budget."""
        if self.schedule not in SCHEDULES:
            raise PosbenchError(f"train.schedule={self.schedule} is not a schedule; valid: {', '.join(SCHEDULES)}")
        if self.schedule != "wsd":
            if self.budgets:
                raise PosbenchError(f"train.budgets={list(self.budgets)} needs train.schedule=wsd (got "
                                    f"train.schedule={self.schedule}): only a warmup-stable-decay run can branch")
            return
        if self.cooldown_shape not in COOLDOWN_SHAPES:
            raise PosbenchError(f"train.cooldown_shape={self.cooldown_shape} is not a cool-down shape; valid: "
                                f"{', '.join(COOLDOWN_SHAPES)}")
        if not 0 < self.cooldown <= 1:
            raise PosbenchError(f"train.cooldown={self.cooldown:g} must be a fraction of the steps in (0, 1]")
        budgets = list(self.budgets)
        if any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in budgets):
            raise PosbenchError(f"train.budgets={budgets} must be positive step counts")
        if any(b >= c for b, c in zip(budgets, budgets[1:])):
            raise PosbenchError(f"train.budgets={budgets} must be increasing, e.g. [600,1200,2400]")
        for steps in budgets or [self.steps]:
            what = f"the budget of {steps} steps" if budgets else f"train.steps={steps}"
            start = cooldown_start(self.cooldown, steps)
            if start >= steps:
                raise PosbenchError(f"train.cooldown={self.cooldown:g} gives {what} no cool-down step; "
                                    "raise train.cooldown or the steps")
            if start < self.warmup_steps:
                raise PosbenchError(f"train.cooldown={self.cooldown:g} starts the cool-down of {what} at step "
                                    f"{start}, before the warm-up ends (train.warmup_steps={self.warmup_steps}); "
                                    "lower train.cooldown or train.warmup_steps")


def make_optimizer(model: torch.nn.Module, tc, lr_mult: float = 1.0) -> torch.optim.Optimizer:
    """AdamW with three groups: matrices (decayed), norms/biases (not decayed), and the encoding's
    own position parameters (not decayed, learning rate x ``lr_mult``), so that learned position
    parameters are not pulled to zero by decay."""
    encoding = getattr(model, "encoding", None)  # the benchmark's reference GPT has none
    enc_ids = {id(p) for p in encoding.parameters()} if encoding is not None else set()
    decay, no_decay, position = [], [], []
    for p in model.parameters():  # tied weights appear once
        if not p.requires_grad:
            continue
        if id(p) in enc_ids:
            position.append(p)
        elif p.dim() >= 2:
            decay.append(p)
        else:
            no_decay.append(p)
    groups = [
        {"params": decay, "weight_decay": tc.weight_decay, "lr": tc.lr},
        {"params": no_decay, "weight_decay": 0.0, "lr": tc.lr},
        {"params": position, "weight_decay": 0.0, "lr": tc.lr * lr_mult},
    ]
    return torch.optim.AdamW([g for g in groups if g["params"]], betas=(tc.beta1, tc.beta2))


def training_batch(tokens: np.ndarray, batch_size: int, length: int, seed: int, step: int,
                   task: Task | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(inputs, targets, scored) of one step, from (seed, step) alone: the task's (None: language
    modelling, windows of the corpus with every target scored)."""
    return (task or LanguageModelling()).training_batch(tokens, batch_size, length, seed, step)


@torch.no_grad()
def validation_loss(model, val_tokens, tc, train_len: int, device, task: Task | None = None,
                    options: AttentionOptions | None = None) -> float:
    model.eval()
    losses = []
    for i in range(tc.val_batches):
        # fixed windows, so every validation point and every run sees the same text
        x, y, scored = training_batch(val_tokens, tc.batch_size, train_len, VALIDATION_SEED, i, task)
        with autocast(device):
            logits = model(x.to(device), None, options)
        losses.append((task or LanguageModelling()).loss(logits, y.to(device),
                                                         None if scored is None else scored.to(device)).item())
    model.train()
    return sum(losses) / len(losses)


class _State:
    """Where the loop stands; what a resume state restores."""

    def __init__(self):
        self.start, self.history, self.wall_before = 0, [], 0.0
        self.last_loss, self.val_loss = float("nan"), None
        self.probes: list[dict] = []


def _restore(run_dir: Path, model, opt, sched, state: _State, steps: int | None = None) -> bool:
    """Apply a saved resume state (checked against a budget of ``steps``); on any mismatch put the
    model back as it was and start over."""
    saved = load_resume(run_dir, steps)
    if saved is None:
        return False
    fresh = copy.deepcopy(model.state_dict())
    try:
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        sched.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["torch_rng"])
    except Exception as e:  # noqa: BLE001 - shapes or keys of another model: the file is useless here
        model.load_state_dict(fresh)
        discard_resume(run_dir, f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
        return False
    state.start, state.history, state.wall_before = saved["next_step"], list(saved["history"]), float(saved["train_wall_s"])
    state.last_loss, state.val_loss = saved["last_loss"], saved["val_loss"]
    state.probes = list(saved.get("probes", []))
    log.info("resuming from step %d (%s)", state.start, run_dir)
    return True


def train_model(
    model: torch.nn.Module,
    train_tokens: np.ndarray,
    val_tokens: np.ndarray,
    tc,
    train_len: int,
    seed: int,
    device: torch.device,
    *,
    lr_mult: float = 1.0,
    compile: bool = False,
    tracker: Tracker | None = None,
    resume_dir: Path | None = None,
    desc: str = "train",
    probe: Callable[[torch.nn.Module], list[dict]] | None = None,
    probe_steps: Collection[int] = (),
    task: Task | None = None,
    attention: str = "auto",
    positions_at: Callable[[int], torch.Tensor] | None = None,
    validate_at: Collection[int] = (),
    snapshots: Mapping[int, Path] | None = None,
) -> dict:
    """Train in place for ``tc.steps`` steps; returns status, timing and the history of the run.

    ``tc``: the ``train`` settings (TrainConfig, above). With ``resume_dir``, the full
    training state is saved there every ``tc.checkpoint_every`` steps, and a run that finds one
    continues from it. ``probe(model)`` runs after each step of ``probe_steps`` (1-based, like the
    history); its records get the step and the tokens trained so far. ``task``: train on a synthetic
    task (posbench/tasks), its filler from the token splits, the loss on its answers (plus the
    language-model loss on every token with the task's ``loss: mixed``). ``positions_at(step)``: the
    positions of that step's windows (an extension method's, e.g. PoSE's; None: 0..train_len-1).
    ``validate_at``: more steps that measure validation loss. ``snapshots``: step -> file that gets
    the full resume state after that step (a WSD trunk's branch points, posbench/jobs/branches.py)."""
    tracker = tracker or Tracker()
    opt = make_optimizer(model, tc, lr_mult)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, tc))
    st = _State()
    if resume_dir is not None and not _restore(resume_dir, model, opt, sched, st, tc.steps):
        # a failed restore may have touched the optimiser: start it (and its schedule) afresh
        opt = make_optimizer(model, tc, lr_mult)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, tc))
    positions = torch.arange(train_len, device=device)
    task = task or LanguageModelling()  # None: language modelling on the corpus
    status = "completed"
    tokens_per_step = tc.batch_size * train_len
    model.train()
    # compiled forward shares the parameters; the plain module is what gets saved and evaluated
    forward = torch.compile(model) if compile else model
    options = AttentionOptions(kernel=attention)  # the attention kernel for bias encodings (posbench/attention/kernels.py)
    # steps that must measure validation loss (and so log), besides every val_every-th
    val_steps = {half_step(tc.steps), tc.steps, *probe_steps, *validate_at}
    snapshots = dict(snapshots or {})

    def state_at(next_step: int) -> dict:
        return resume_state(model=model.state_dict(), optimizer=opt.state_dict(), scheduler=sched.state_dict(),
                            torch_rng=torch.get_rng_state(), next_step=next_step, history=st.history,
                            last_loss=st.last_loss, val_loss=st.val_loss, probes=st.probes,
                            train_wall_s=st.wall_before + time.perf_counter() - t0)

    check_threads_at_start(device)  # a shared CPU: say so and what to do (posbench/core/cpu_share.py)
    slowdown = SlowdownWatch(device)
    t0 = t_log = time.perf_counter()
    logged_step = st.start
    # a bar on a terminal; plain log lines in a log file or pipe (posbench/core/progress.py)
    bar = progress(range(st.start, tc.steps), initial=st.start, total=tc.steps, desc=desc, unit="step")
    # Ctrl-C or SIGTERM: finish the step, save a resume state at it, stop (posbench/core/interrupts.py)
    with stop_at_step_boundary(desc) as stop:
        for step in bar:
            x, y, scored = training_batch(train_tokens, tc.batch_size, train_len, seed, step, task)
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            scored = None if scored is None else scored.to(device, non_blocking=True)
            if positions_at is not None:
                positions = positions_at(step).to(device)
            elif tc.random_positions:
                positions = sample_positions(tc.random_positions, train_len, seed, step).to(device)
            with autocast(device):
                logits = forward(x, positions, options)
            loss = task.loss(logits, y, scored)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)

            last = step == tc.steps - 1
            validate = (step + 1) % tc.val_every == 0 or step + 1 in val_steps
            if (step + 1) % tc.log_every == 0 or validate:
                # reading the loss syncs the device, so it happens only at log steps
                st.last_loss, gn = loss.item(), grad_norm.item()
                now = time.perf_counter()
                tok_s = tokens_per_step * (step + 1 - logged_step) / max(now - t_log, 1e-9)
                t_log, logged_step = now, step + 1
                entry = {"step": step + 1, "loss": st.last_loss, "lr": sched.get_last_lr()[0], "grad_norm": gn, "tokens_per_s": tok_s}
                if not (math.isfinite(st.last_loss) and math.isfinite(gn)):
                    status = "diverged"
                    st.history.append(entry)
                    log.warning("loss became %s at step %d: run marked diverged", st.last_loss, step + 1)
                    break
                if validate:
                    st.val_loss = entry["val_loss"] = validation_loss(model, val_tokens, tc, train_len, device, task, options)
                    t_log = time.perf_counter()  # validation time is not training throughput
                st.history.append(entry)
                slowdown.update(tok_s, step + 1)
                tracker.log({k: v for k, v in entry.items() if k != "step"}, step=step + 1)
                bar.set_postfix(loss=f"{st.last_loss:.3f}", tok_s=f"{tok_s:,.0f}")
            if probe is not None and step + 1 in probe_steps:
                t_probe = time.perf_counter()
                records = probe(model)
                model.train()  # the probe evaluates in eval mode
                st.probes += [{"step": step + 1, "train_tokens": (step + 1) * tokens_per_step, **r} for r in records]
                t_log += time.perf_counter() - t_probe  # the probe's time is not training throughput
            if step + 1 in snapshots:
                atomic_torch_save(snapshots[step + 1], state_at(step + 1))
            if resume_dir is not None and (step + 1) % tc.checkpoint_every == 0 and not last:
                save_resume(resume_dir, state_at(step + 1))
            if stop.requested() and not last:  # at the step boundary: nothing of this step is lost
                if resume_dir is not None:
                    save_resume(resume_dir, state_at(step + 1))
                bar.close()
                raise stop.stop(step + 1, tc.steps, saved=resume_dir is not None)
        if stop.requested():  # in the last step (or one that diverged): the caller saves the run, then raises this
            defer(stop.trained(tc.steps) if status == "completed" else Interrupted(stop.signum))
    bar.close()
    wall = st.wall_before + time.perf_counter() - t0
    steps_done = st.history[-1]["step"] if st.history else 0
    return {
        "status": status,
        "train_wall_s": wall,
        "train_steps": steps_done,
        "train_tokens": steps_done * tokens_per_step,
        "final_train_loss": st.last_loss,
        "final_val_loss": st.val_loss,
        "history": st.history,
        "during_training": st.probes,
    }


def half_step(steps: int) -> int:
    """The step that starts the last doubling of a budget: validation loss is always measured there."""
    return max(1, steps // 2)
