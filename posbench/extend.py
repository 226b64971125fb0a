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
  length`` windows), at a constant learning rate after ``extend.warmup_steps`` (by default the
  rate at which the parent's cosine schedule ended; no encoding gets a private rate);
* it is evaluated like its parent, at multiples of the parent's train_len and on the same tokens,
  with its rows named ``<encoding><tag>``: ``rope+yarn@4x+ft100``, ``alibi@4x+ft0`` (0 steps: the
  parent's weights with the method, the zero-shot point).
"""

from __future__ import annotations

import copy
import logging
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from posbench.variants import extension_tag

log = logging.getLogger("posbench")

PARENT_WAIT_S = 5.0  # poll interval while another process trains the parent


def is_extension(cfg: DictConfig) -> bool:
    x = cfg.get("extend")
    return x is not None and x.get("length") is not None


def factor(cfg: DictConfig) -> float:
    return cfg.extend.length / cfg.train_len


def tag(cfg: DictConfig) -> str:
    """The row-name tag of an extension run ('' for an ordinary run)."""
    return extension_tag(cfg.extend.method, factor(cfg), cfg.extend.steps) if is_extension(cfg) else ""


def parent_config(cfg: DictConfig) -> DictConfig:
    """The config of the run this one continues: the same, with ``extend`` at its defaults."""
    from posbench.config import ExtendConfig

    parent = copy.deepcopy(cfg)
    parent.extend = OmegaConf.structured(ExtendConfig)
    return parent


def finetune_settings(cfg: DictConfig) -> DictConfig:
    """The ``train`` settings of the fine-tune: the parent's, with the extension's steps, windows per
    step and learning rate, constant after the warm-up (min_lr_ratio 1)."""
    t, x = cfg.train, cfg.extend
    batch = x.batch_size or max(1, t.batch_size * cfg.train_len // x.length)
    lr = x.lr if x.lr is not None else t.lr * t.min_lr_ratio
    steps = max(1, x.steps)
    return OmegaConf.merge(t, {"steps": x.steps, "batch_size": batch, "lr": lr, "warmup_steps": x.warmup_steps,
                               "min_lr_ratio": 1.0, "val_every": min(t.val_every, steps),
                               "checkpoint_every": min(t.checkpoint_every, steps)})


def apply(model, cfg: DictConfig) -> None:
    """Give a freshly built model of an extension run its method and its rows' names."""
    if is_extension(cfg):
        model.encoding.extend_to(cfg.extend.method, factor(cfg))
        model.encoding.variant_tag = tag(cfg)


def wait_for_parent(parent: DictConfig, run) -> Path:
    """Make sure the parent is trained (training it here unless another process is) and return its
    run directory. ``run`` is posbench.train.run (passed in: this module sits below it)."""
    from posbench.errors import PosbenchError
    from posbench.results import read_metrics, run_dir_of, run_id, run_lock

    rid, run_dir = run_id(parent), run_dir_of(parent)
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
