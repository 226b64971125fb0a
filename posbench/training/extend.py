"""Context extension by a short fine-tune: a finished run (the parent) continued at a longer window.

    posbench-train encoding=rope train_len=64 extend.length=256 extend.method=yarn extend.steps=100

The PI and YaRN papers extend a trained model by fine-tuning it briefly at the target length with
the extension applied (PI: LLaMA at 8192 tokens, 200 steps; YaRN: fewer). An extension run is a
run of its own (directory, resume, skip, sweeps) whose config is its parent's plus ``extend``:

* the parent is the same config without ``extend`` (same encoding, model, train_len, seed, data and
  training settings); it is trained first when it is missing, and its final weights are loaded;
* the model keeps the parent's train_len (every setting an encoding derives from it stays), adopts
  the method at factor s = length / train_len (RoPE: linear, ntk or yarn frequencies; ``none``:
  plain continuation for any encoding), and trains ``extend.steps`` steps on windows of ``length``
  tokens, by default with as many tokens per step as the parent (``batch_size x train_len /
  length`` windows), at a constant learning rate (by default the rate at which the parent's cosine
  schedule ended; no encoding gets a private rate) after a linear warm-up of ``extend.warmup_steps``
  (by default 10% of the steps: the restart's fresh Adam moments otherwise take full-size first
  steps, which made ALiBi and KERPLE worse after 25 steps in the first extension results);
* ``extend.length = train_len`` with method ``none`` is the control: the parent continued at its
  own length for the same steps and tokens, so that a method's gain at the target can be read net
  of "more training" (the fine-tune at 4x also improved 1x perplexity by 5-6% for ALiBi and
  KERPLE);
* PoSE and DroPE (``pose``, ``pose_yarn``, ``drope``: RopeScaling.finetune_at_train_len) fine-tune on
  windows of train_len instead, with as many windows per step as the parent (PoSE on skip-wise
  positions reaching the target: RopeScaling.training_positions, posbench/attention/positions.py);
* ``state_passing`` (a recurrent model's, posbench/training/state_passing.py) fine-tunes on windows of
  train_len too, each continuing its batch row's window of the previous step, the recurrent layers'
  state passed from one to the next through extend.length tokens;
* it is evaluated like its parent, at multiples of the parent's train_len and on the same tokens,
  with its rows named ``<encoding><tag>``: ``rope+yarn@4x+ft100``, ``alibi@4x+ft0`` (0 steps: the
  parent's weights with the method, the zero-shot point).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

from posbench.attention.rope_scalings import ROPE_SCALINGS, extend_methods
from posbench.core.errors import PosbenchError
from posbench.core.settings import check_count
from posbench.store.lock import run_lock
from posbench.store.rundir import read_metrics
from posbench.training import state_passing
from posbench.training.trainer import TrainConfig

# A run's settings (posbench.spec.RunSpec) reach this module as ``spec``: the spec sits a layer above
# training (it gathers every part's settings), so it is not imported here, only read.
RunSpec = Any

log = logging.getLogger("posbench")

PARENT_WAIT_S = 5.0  # poll interval while another process trains the parent


@dataclass(frozen=True)
class ExtendConfig:
    """Continue a finished run (the parent: this config without ``extend``) at a longer window.
    ``length`` null: an ordinary run."""

    length: Optional[int] = None  # target window: a multiple of train_len, longer than it (= train_len: the control)
    method: str = "none"  # none (plain continuation) | a RoPE scaling: linear, ntk, yarn, ... (factor length / train_len)
    steps: int = 0  # fine-tuning steps at `length` (0: the parent's weights as they are, with the method)
    lr: Optional[float] = None  # null: train.lr x train.min_lr_ratio (finetune_settings)
    warmup_steps: Optional[int] = None  # linear warm-up, then constant; null: 10% of the steps
    batch_size: Optional[int] = None  # windows per step; null: as many tokens per step as the parent

    def check(self, spec: RunSpec) -> None:
        """An extension run continues its parent at a longer window (nothing to check otherwise)."""
        if self.length is None:
            return
        L = spec.train_len
        if self.length < L or self.length % L:
            raise PosbenchError(f"extend.length={self.length} must be a multiple of train_len={L} longer than it "
                                f"(e.g. {4 * L}), or train_len itself for the continued-training control")
        if self.method not in methods():
            raise PosbenchError(f"unknown extend.method {self.method!r}; valid: {', '.join(methods())}")
        if self.length == L and self.method != "none":
            raise PosbenchError(f"extend.length=train_len={L} is the continued-training control: it takes "
                                f"extend.method=none, not {self.method!r}")
        enc = spec.encoding.build(spec.shape)
        if self.method == state_passing.METHOD:
            state_passing.check(spec)  # the recurrent layers' method: the encoding continues as it is
        else:
            enc.extend_to(self.method, self.length / L)  # refuses a method the encoding does not have
        if (reason := enc.undefined_reason(self.length)) is not None:
            raise PosbenchError(f"{spec.encoding.name} cannot be extended to {self.length} tokens: {reason}")
        if self.steps < 0 or (self.warmup_steps or 0) < 0:
            raise PosbenchError(f"extend.steps and extend.warmup_steps must be >= 0, got {self.steps} and {self.warmup_steps}")
        if self.lr is not None and not self.lr > 0:
            raise PosbenchError(f"extend.lr must be positive (or null), got {self.lr:g}")
        if self.batch_size is not None and self.batch_size < 1:
            raise PosbenchError(f"extend.batch_size must be a positive integer (or null), got {self.batch_size}")
        # the fine-tune's tokens per step: its own batch at the target window, or the parent's per step
        if self.batch_size:
            check_count("extend.batch_size", self.batch_size, self.length, f"extend.batch_size x extend.length={self.length}")
        per_step = self.batch_size * self.length if self.batch_size else spec.train.batch_size * L
        check_count("extend.steps", self.steps, per_step, f"extend.steps x {per_step} tokens per step")
        if spec.train.random_positions is not None:
            raise PosbenchError("extend does not combine with train.random_positions; set train.random_positions=null")

    def factor(self, train_len: int) -> float:
        return self.length / train_len

    def warmup(self) -> int:
        """Warm-up steps of the restart: ``warmup_steps``, or 10% of the steps (at least 1)."""
        if self.warmup_steps is not None:
            return self.warmup_steps
        return max(1, round(0.1 * self.steps)) if self.steps > 0 else 0

    def tag(self, train_len: int) -> str:
        """The row-name tag of an extension run ('' for an ordinary run)."""
        return "" if self.length is None else extension_tag(self.method, self.factor(train_len), self.steps)


def methods() -> list[str]:
    """Every extend.method: ``none``, the RoPE scalings that fine-tune, and state passing."""
    return [*extend_methods(), state_passing.METHOD]


def _method(spec: RunSpec):
    """The extension's RoPE scaling (None for ``none`` and state passing)."""
    return None if spec.extend.method in ("none", state_passing.METHOD) else ROPE_SCALINGS.get(spec.extend.method)


def _passes_state(spec: RunSpec) -> bool:
    return spec.is_extension and spec.extend.method == state_passing.METHOD


def finetune_window(spec: RunSpec) -> int:
    """The windows the fine-tune trains on: the target length, or train_len for PoSE, DroPE and state passing."""
    kind = _method(spec)
    if _passes_state(spec) or (kind is not None and kind.finetune_at_train_len):
        return spec.train_len
    return spec.extend.length


def training_task(spec: RunSpec, task):
    """The fine-tune's task: ``task``, or for state passing language modelling on consecutive windows."""
    return state_passing.training_task(spec, task) if _passes_state(spec) else task


def training_positions(spec: RunSpec):
    """step -> the positions of that fine-tuning step's windows (PoSE), or None (0..window-1)."""
    kind = _method(spec)
    if kind is None or kind.training_positions is None:
        return None
    fn, L, target, seed = kind.training_positions, spec.train_len, spec.extend.length, spec.seed
    return lambda step: fn(L, target, seed, step)


def finetune_settings(spec: RunSpec) -> TrainConfig:
    """The ``train`` settings of the fine-tune: the parent's, with the extension's steps, windows per
    step and learning rate, constant after the warm-up (min_lr_ratio 1). The default rate is
    ``train.lr x train.min_lr_ratio``: where a cosine parent ended; a WSD parent (``train.schedule=wsd``)
    cools down to 0, where a fine-tune cannot learn, so it gets the same value, not its own end."""
    t, x = spec.train, spec.extend
    batch = x.batch_size or max(1, t.batch_size * spec.train_len // finetune_window(spec))
    lr = x.lr if x.lr is not None else t.lr * t.min_lr_ratio
    steps = max(1, x.steps)
    # constant after the warm-up whatever the parent's schedule was (cosine with min_lr_ratio 1)
    return replace(t, steps=x.steps, batch_size=batch, lr=lr, warmup_steps=x.warmup(), min_lr_ratio=1.0,
                   schedule="cosine", budgets=[],
                   val_every=min(t.val_every, steps), checkpoint_every=min(t.checkpoint_every, steps))


def apply(model, spec: RunSpec) -> None:
    """Give a freshly built model of an extension run its method (its rows' names carry
    ``spec.extend.tag``, passed to the evaluation)."""
    if _passes_state(spec):
        state_passing.start(model, spec)  # the recurrent layers' carries (used in training mode only)
    elif spec.is_extension:
        model.encoding.extend_to(spec.extend.method, spec.extend.factor(spec.train_len))


def wait_for_parent(parent: RunSpec, run) -> Path:
    """Make sure the parent is trained (training it here unless another process is) and return its
    run directory. ``run`` is posbench.jobs.train.run (passed in: this module sits below it)."""
    rid, run_dir = parent.run_id, parent.run_dir
    while True:
        run(parent)
        m = read_metrics(run_dir, warn=False)
        if m is not None and m["status"] == "completed":
            return run_dir
        if m is not None and m["status"] == "diverged":
            raise PosbenchError(f"the parent run {rid} diverged: there is nothing to extend")
        with run_lock(run_dir) as mine:
            if mine:  # nobody is training it, and it is not complete
                raise PosbenchError(f"the parent run {rid} did not complete; see {run_dir}")
        log.info("waiting for the parent run %s: another process is training it", rid)
        time.sleep(PARENT_WAIT_S)


def extension_tag(method: str, factor: float, steps: int) -> str:
    """The row-name tag of an extension run: ``+yarn@4x+ft100`` (RoPE method), ``@4x+ft100`` (plain)."""
    return f"{'' if method == 'none' else '+' + method}@{factor:g}x+ft{steps}"
