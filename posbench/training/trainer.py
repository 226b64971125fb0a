"""The training loop: a model, its data and the ``train`` settings in; status and history out.

It knows nothing of Hydra or of the run directory's layout beyond the resume state it is handed
(posbench.store.resume saves and loads it), so the benchmark and tests call it directly. A step
(``train_step``) and a loop (``train_model``): what the steps read is posbench/training/data.py,
when the loop logs, validates, probes and saves is posbench/training/steps.py (the same rules a
budget branch cuts the trunk's record by), what it does then is posbench/training/hooks.py, and
the state a resume restores is posbench/training/state.py.

AdamW (matrices decayed; norms, biases and the encoding's position parameters not), linear warm-up
then cosine decay to ``min_lr_ratio`` or warmup-stable-decay (posbench/training/schedules.py),
gradient clipping, and a resume state every ``checkpoint_every`` steps from which a killed run
continues bit for bit: batches depend only on (seed, step), so nothing of a data loader needs
saving. A Ctrl-C or SIGTERM is answered after the current step with a resume state at that step
(posbench/core/interrupts.py), so it loses no work. A ``probe`` (posbench.jobs.train builds one
from ``eval.during_training``) is called at the rules' probe steps with the model in eval mode; its
records are kept, resumed and returned as ``during_training``.
"""

from __future__ import annotations

import logging
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import List, Optional

import torch

from posbench.attention.options import AttentionOptions
from posbench.attention.positions import RANDOM_POSITION_KINDS
from posbench.core.device import autocast
from posbench.core.errors import PosbenchError
from posbench.core.settings import check_count
from posbench.tasks import Task
from posbench.training.data import TrainingData
from posbench.training.data import training_batch as training_batch  # re-exported for callers
from posbench.training.hooks import Hooks
from posbench.training.parallel import Processes
from posbench.training.schedules import COOLDOWN_SHAPES, SCHEDULES, cooldown_start
from posbench.training.schedules import (
    lr_factor as lr_factor,  # the schedules' one entry, re-exported for callers
)
from posbench.training.state import LoopState
from posbench.training.steps import StepRules

log = logging.getLogger("posbench")


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
    # how those positions are drawn: integer (Ruoss et al., distinct integers) | float (Random Float
    # Sampling, Shimizu et al. 2026: sorted reals from [0, random_positions)); left out of run ids at integer
    random_positions_kind: str = "integer"
    val_every: int = 200  # steps between validation losses (and at the last step)
    checkpoint_every: int = 100  # steps between resume states (a killed run continues from the last)
    val_batches: int = 8
    log_every: int = 10

    def check(self, train_len: int) -> None:
        rp = self.random_positions
        if rp is not None and rp < train_len:
            raise PosbenchError(f"train.random_positions={rp} must be at least train_len={train_len} (or null)")
        if self.random_positions_kind not in RANDOM_POSITION_KINDS:
            raise PosbenchError(f"train.random_positions_kind={self.random_positions_kind!r}; valid: "
                                f"{', '.join(RANDOM_POSITION_KINDS)}")
        if self.random_positions_kind != "integer" and rp is None:
            raise PosbenchError(f"train.random_positions_kind={self.random_positions_kind} draws positions from "
                                f"[0, train.random_positions): set train.random_positions (at least train_len={train_len})")
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
    # fused: one CUDA kernel for the whole update instead of several per tensor (the small models
    # are launch-bound on a GPU); the same arithmetic, and CPU keeps the default implementation
    fused = all(p.is_cuda for g in groups for p in g["params"])
    return torch.optim.AdamW([g for g in groups if g["params"]], betas=(tc.beta1, tc.beta2), fused=fused or None)


@torch.no_grad()
def validation_loss(model, data: TrainingData, tc, device, options: AttentionOptions | None = None) -> float:
    """The mean loss of the ``tc.val_batches`` fixed validation batches (the task's loss)."""
    model.eval()
    losses = []
    for x, y, scored in data.validation_batches(tc):
        with autocast(device):
            logits = model(x.to(device), None, options)
        losses.append(data.task.loss(logits, y.to(device), None if scored is None else scored.to(device)).item())
    model.train()
    return sum(losses) / len(losses)


def _optimiser(model, tc, lr_mult: float):
    opt = make_optimizer(model, tc, lr_mult)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, tc))


def train_step(forward, model, opt, sched, batch, tc, task: Task, options: AttentionOptions):
    """One optimiser step on ``batch`` (inputs, targets, scored, positions): the loss and the
    gradient norm before clipping, both still on the device."""
    x, y, scored, positions = batch
    with autocast(x.device):
        logits = forward(x, positions, options)
    loss = task.loss(logits, y, scored)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
    opt.step()
    sched.step()
    opt.zero_grad(set_to_none=True)
    return loss, grad_norm


@contextmanager
def compiled_blocks(model: torch.nn.Module, on: bool):
    """Regional compilation (PyTorch's recipe "Reducing torch.compile cold start compilation time
    with regional compilation"): each repeated block of ``model.blocks`` is compiled in place; the
    blocks share their code, so where the encoding reads nothing per layer one compiled graph can
    serve every layer. Not so for posbench's attention blocks under torch 2.11: a block reads its
    layer index (``self.layer``), which dynamo takes as a constant, so every layer compiles its own
    graph (a whole model's compile time), and past dynamo's recompile limit (8) the remaining
    layers ran eager (seen on an H200, medium model: nope trained at 0.39x the plain GPT's speed,
    whose blocks read no index). The limit is raised to twice the blocks, so no layer runs eager.
    (Making the index an input, ``allow_unspec_int_on_nn_module``, gave one graph for all layers
    on CPU with torch 2.13; on torch 2.11 it failed inside dynamo at FoX's score term: not used.)
    Undone on exit, so that evaluation runs eager: its lengths change (1x .. 16x) and a compiled
    block would recompile per length. The saved state dict is the same either way (in-place
    compilation renames nothing)."""
    blocks = list(getattr(model, "blocks", ())) if on else []
    if on and not blocks:
        log.warning("compile=true: this model has no repeated blocks (model.blocks); it trains eager")
    wanted = {"recompile_limit": max(8, 2 * len(blocks)), "cache_size_limit": max(8, 2 * len(blocks))}  # (its older name)
    settings = {k: v for k, v in wanted.items() if hasattr(torch._dynamo.config, k)} if blocks else {}
    for block in blocks:
        block.compile()
    try:
        with torch._dynamo.config.patch(**settings):
            yield
    finally:
        for block in blocks:
            block._compiled_call_impl = None  # nn.Module.compile's own slot: None is eager again


def train_model(model: torch.nn.Module, data: TrainingData, tc: TrainConfig, device: torch.device, *,
                rules: StepRules | None = None, hooks: Hooks | None = None, processes: Processes | None = None,
                lr_mult: float = 1.0, compile: bool = False, attention: str = "auto") -> dict:
    """Train in place for ``tc.steps`` steps; returns status, timing and the history of the run.

    ``data``: what the steps read (posbench/training/data.py); ``tc``: the ``train`` settings;
    ``rules``: when to log, validate, probe and save (posbench/training/steps.py; None: the plain
    rules of ``tc``); ``hooks``: progress, tracking, probes, resume states and snapshots
    (posbench/training/hooks.py); ``processes``: this process's share of a data-parallel run
    (posbench/training/parallel.py; None: one process). ``lr_mult``: the encoding's position
    parameters' learning-rate factor; ``attention``: the kernel for bias encodings."""
    rules, hooks, procs = rules or StepRules.of(tc), hooks or Hooks(), processes or Processes()
    procs.check(tc.batch_size)
    data, opt, sched = replace(data, rank=procs.rank, world=procs.world), *_optimiser(model, tc, lr_mult)
    st = LoopState()
    if hooks.resume_dir is not None and not st.restore(hooks.resume_dir, model, opt, sched, tc.steps, procs.main):
        opt, sched = _optimiser(model, tc, lr_mult)  # a failed restore may have touched the optimiser
    tokens_per_step, status = tc.batch_size * data.length, "completed"
    model.train()
    # DDP shares the parameters with the plain module, which is what gets saved and evaluated
    forward = procs.wrap(model, device)
    options = AttentionOptions(kernel=attention)
    with hooks.running(rules, st.start, device, procs) as live, compiled_blocks(model, compile):
        st.start_clock()
        for step in live.steps:
            loss, grad_norm = train_step(forward, model, opt, sched, data.batch(step, tc, device), tc, data.task, options)
            n = step + 1
            if rules.logs(n):  # reading the loss syncs the device, so it happens only at log steps
                st.last_loss, gn = procs.mean(loss).item(), grad_norm.item()  # the global batch's loss
                entry = {"step": n, "loss": st.last_loss, "lr": sched.get_last_lr()[0], "grad_norm": gn,
                         "tokens_per_s": st.tokens_per_s(n, tokens_per_step)}
                if not (math.isfinite(st.last_loss) and math.isfinite(gn)):
                    status = "diverged"
                    st.history.append(entry)
                    log.warning("loss became %s at step %d: run marked diverged", st.last_loss, n)
                    break
                if rules.validates(n):
                    since = time.perf_counter()
                    st.val_loss = entry["val_loss"] = validation_loss(model, data, tc, device, options)
                    st.exclude(since)  # validation time is not training throughput
                st.history.append(entry)
                live.logged(entry)
            if rules.probes(n):
                since = time.perf_counter()
                st.probes += [{"step": n, "train_tokens": n * tokens_per_step, **r} for r in live.probe(model)]
                st.exclude(since)  # the probe's time is not training throughput
            live.after(n, lambda: st.saved(model, opt, sched, n))
        live.finished(status == "completed")
    steps_done = st.history[-1]["step"] if st.history else 0
    return {"status": status, "train_wall_s": st.wall(), "train_steps": steps_done,
            "train_tokens": steps_done * tokens_per_step, "final_train_loss": st.last_loss,
            "final_val_loss": st.val_loss, "history": st.history, "during_training": st.probes}
