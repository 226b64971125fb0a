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
from typing import Callable, Optional

from posbench.attention.rope_scalings import ROPE_SCALINGS, RopeScaling, extend_methods
from posbench.core.errors import PosbenchError
from posbench.core.settings import check_count
from posbench.encodings import PositionalEncoding
from posbench.model.transformer import ModelConfig
from posbench.store.rundir import RunDir
from posbench.training import state_passing
from posbench.training.trainer import TrainConfig

# A run's settings (posbench.spec.RunSpec) sit a layer above training, so they reach this module as
# the typed parts each function reads: the ExtendConfig, train_len, seed, the TrainConfig, the built encoding.

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

    def check(self, train_len: int, encoding: PositionalEncoding, train: TrainConfig, model: ModelConfig) -> None:
        """An extension run continues its parent at a longer window (nothing to check otherwise):
        the run's ``train_len``, its built ``encoding`` (a copy nothing else uses: the method is
        tried on it, changing it), ``train`` settings (the parent's tokens per step) and ``model``
        (state passing needs recurrent layers)."""
        if self.length is None:
            return
        L, enc = train_len, encoding
        if self.length < L or self.length % L:
            raise PosbenchError(f"extend.length={self.length} must be a multiple of train_len={L} longer than it "
                                f"(e.g. {4 * L}), or train_len itself for the continued-training control")
        if self.method not in methods():
            raise PosbenchError(f"unknown extend.method {self.method!r}; valid: {', '.join(methods())}")
        if self.length == L and self.method != "none":
            raise PosbenchError(f"extend.length=train_len={L} is the continued-training control: it takes "
                                f"extend.method=none, not {self.method!r}")
        if self.method == state_passing.METHOD:
            state_passing.check(model)  # the recurrent layers' method: the encoding continues as it is
        else:
            enc.extend_to(self.method, self.length / L)  # refuses a method the encoding does not have
        if (reason := enc.undefined_reason(self.length)) is not None:
            raise PosbenchError(f"{enc.name} cannot be extended to {self.length} tokens: {reason}")
        if self.steps < 0 or (self.warmup_steps or 0) < 0:
            raise PosbenchError(f"extend.steps and extend.warmup_steps must be >= 0, got {self.steps} and {self.warmup_steps}")
        if self.lr is not None and not self.lr > 0:
            raise PosbenchError(f"extend.lr must be positive (or null), got {self.lr:g}")
        if self.batch_size is not None and self.batch_size < 1:
            raise PosbenchError(f"extend.batch_size must be a positive integer (or null), got {self.batch_size}")
        # the fine-tune's tokens per step: its own batch at the target window, or the parent's per step
        if self.batch_size:
            check_count("extend.batch_size", self.batch_size, self.length, f"extend.batch_size x extend.length={self.length}")
        per_step = self.batch_size * self.length if self.batch_size else train.batch_size * L
        check_count("extend.steps", self.steps, per_step, f"extend.steps x {per_step} tokens per step")
        if train.random_positions is not None:
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


def _method(x: ExtendConfig) -> RopeScaling | None:
    """The extension's RoPE scaling (None for ``none`` and state passing)."""
    return None if x.method in ("none", state_passing.METHOD) else ROPE_SCALINGS.get(x.method)


def _passes_state(x: ExtendConfig) -> bool:
    return x.length is not None and x.method == state_passing.METHOD


def finetune_window(x: ExtendConfig, train_len: int) -> int:
    """The windows the fine-tune trains on: the target length, or train_len for PoSE, DroPE and state passing."""
    kind = _method(x)
    return train_len if _passes_state(x) or (kind is not None and kind.finetune_at_train_len) else x.length


def extension_task(x: ExtendConfig, train_len: int, task):
    """The fine-tune's task: ``task``, or for state passing language modelling on consecutive windows."""
    return state_passing.stream_task(task, state_passing.segments(x.length, train_len)) if _passes_state(x) else task


def training_positions(x: ExtendConfig, train_len: int, seed: int):
    """step -> the positions of that fine-tuning step's windows (PoSE), or None (0..window-1)."""
    kind = _method(x)
    if kind is None or kind.training_positions is None:
        return None
    fn, L, target = kind.training_positions, train_len, x.length
    return lambda step: fn(L, target, seed, step)


def finetune_settings(x: ExtendConfig, t: TrainConfig, train_len: int) -> TrainConfig:
    """The ``train`` settings of the fine-tune: the parent's (``t``), with the extension's steps,
    windows per step and learning rate, constant after the warm-up (min_lr_ratio 1). The default rate is
    ``train.lr x train.min_lr_ratio``: where a cosine parent ended; a WSD parent (``train.schedule=wsd``)
    cools down to 0, where a fine-tune cannot learn, so it gets the same value, not its own end."""
    batch = x.batch_size or max(1, t.batch_size * train_len // finetune_window(x, train_len))
    lr = x.lr if x.lr is not None else t.lr * t.min_lr_ratio
    steps = max(1, x.steps)
    # constant after the warm-up whatever the parent's schedule was (cosine with min_lr_ratio 1)
    return replace(t, steps=x.steps, batch_size=batch, lr=lr, warmup_steps=x.warmup(), min_lr_ratio=1.0,
                   schedule="cosine", budgets=[],
                   val_every=min(t.val_every, steps), checkpoint_every=min(t.checkpoint_every, steps))


def apply(model, x: ExtendConfig, train_len: int) -> None:
    """Give a freshly built model of an extension run its method (its rows' names carry
    ``x.tag``, passed to the evaluation); nothing for an ordinary run."""
    if _passes_state(x):
        state_passing.start(model, state_passing.segments(x.length, train_len))  # the carries (training mode only)
    elif x.length is not None:
        model.encoding.extend_to(x.method, x.factor(train_len))


def wait_for_parent(run_id: str, folder: RunDir, train_parent: Callable[[], object]) -> RunDir:
    """Make sure the parent (run ``run_id`` in ``folder``) is trained (by ``train_parent()``, here,
    unless another process is) and return its run directory. ``train_parent`` runs
    posbench.jobs.train.run on the parent's spec (passed in: this module sits below it)."""
    rid = run_id
    while True:
        train_parent()
        m = folder.read_metrics(warn=False)
        if m is not None and m["status"] == "completed":
            return folder
        if m is not None and m["status"] == "diverged":
            raise PosbenchError(f"the parent run {rid} diverged: there is nothing to extend")
        with folder.lock() as mine:
            if mine:  # nobody is training it, and it is not complete
                raise PosbenchError(f"the parent run {rid} did not complete; see {folder}")
        log.info("waiting for the parent run %s: another process is training it", rid)
        time.sleep(PARENT_WAIT_S)


def extension_tag(method: str, factor: float, steps: int) -> str:
    """The row-name tag of an extension run: ``+yarn@4x+ft100`` (RoPE method), ``@4x+ft100`` (plain)."""
    return f"{'' if method == 'none' else '+' + method}@{factor:g}x+ft{steps}"
