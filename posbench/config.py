"""Structured configs: the types Hydra checks every composed config against, plus value checks.

Hydra/OmegaConf validate types (``train_len=abc`` fails); ``validate`` checks values and raises a
one-line ``PosbenchError`` naming the bad value and what is valid.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from posbench.errors import PosbenchError
from posbench.model import ModelConfig

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")


@dataclass
class DataConfig:
    name: str = "stdlib"
    source: str = "stdlib"  # stdlib | local | hub
    path: Optional[str] = None  # local: file or folder; stdlib: override of the stdlib root
    glob: str = "**/*.txt"  # local folders: which files are documents
    hub_name: Optional[str] = None  # hub: dataset name (or a local dataset folder)
    hub_config: Optional[str] = None
    text_field: str = "text"
    train_split: str = "train"
    val_split: Optional[str] = "validation"  # None: hold out the last val_fraction of the train stream
    val_fraction: float = 0.05
    max_train_bytes: Optional[int] = None  # cap for huge corpora (pg19)
    doc_separator: str = "\0"  # written between documents (rows) in the byte stream
    cache_dir: str = "~/.cache/posbench"


@dataclass
class TrainConfig:
    steps: int = 600
    batch_size: int = 32
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 50
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    # Ruoss et al. 2023: train on sorted positions sampled from [0, random_positions) instead of
    # 0..train_len-1 (None: off). Works with every encoding that reads the position tensor.
    random_positions: Optional[int] = None
    val_every: int = 200
    checkpoint_every: int = 100  # steps between resume states (a killed run continues from the last)
    val_batches: int = 8
    log_every: int = 10


@dataclass
class EvalConfig:
    multiples: List[float] = field(default_factory=lambda: [1, 2, 4, 8, 16])
    protocols: List[str] = field(default_factory=lambda: ["nonoverlapping", "sliding"])
    stride: Optional[int] = None  # sliding: tokens between windows; None: L / 2
    target_tokens: Optional[int] = None  # fixed_target: final tokens of each document; None: half the shortest length
    target_docs: int = 64  # fixed_target: documents scored
    windows_at_max: int = 32  # windows scored at the longest length; fixes the scored-token count
    batch_tokens: int = 16384
    rope_scaling: List[str] = field(default_factory=list)  # extra rows for rope: linear, ntk, dynamic_ntk, yarn
    rope_factor: Optional[float] = None  # None: eval_len / train_len at each length


@dataclass
class LoggerConfig:
    name: str = "none"  # none | wandb
    project: str = "posbench"
    entity: Optional[str] = None
    mode: str = "offline"  # wandb mode: offline | online | disabled
    dir: Optional[str] = None


@dataclass
class Config:
    encoding: Any = MISSING
    model: ModelConfig = MISSING
    data: DataConfig = MISSING
    train: TrainConfig = MISSING
    eval: EvalConfig = MISSING
    logger: LoggerConfig = MISSING
    train_len: int = 64
    seed: int = 0
    device: str = "auto"
    threads: Optional[int] = None  # torch CPU threads per run; None: torch's default (all cores)
    compile: bool = False  # torch.compile the training forward (speed only: not part of the run id)
    attention: str = "auto"  # bias encodings: auto | flex | chunked (posbench/attention.py)
    runs_dir: str = "runs"
    evaluate_after_training: bool = True


@dataclass
class EvaluateConfig:
    """posbench-eval: evaluate an existing run directory again."""

    eval: EvalConfig = MISSING
    run_dir: Optional[str] = None
    device: str = "auto"
    threads: Optional[int] = None
    attention: str = "auto"


def register_configs() -> None:
    cs = ConfigStore.instance()
    cs.store(name="posbench_schema", node=Config)
    cs.store(name="posbench_eval_schema", node=EvaluateConfig)


SOURCES = ("stdlib", "local", "hub")
ATTENTION_SETTINGS = ("auto", "flex", "chunked")
LOGGERS = ("none", "wandb")


def validate(cfg: DictConfig) -> None:
    """Value checks that types alone cannot express; raises PosbenchError with one line."""
    from posbench.encodings import ModelShape, available, build_encoding
    from posbench.protocols import check_eval

    enc = cfg.encoding
    if "name" not in enc:
        raise PosbenchError(f"encoding config has no 'name'; valid names: {', '.join(available())}")
    if position_lr_mult(cfg) <= 0:
        raise PosbenchError(f"encoding.lr_mult must be positive, got {cfg.encoding.lr_mult}")
    if cfg.train_len < 1:
        raise PosbenchError(f"train_len must be a positive integer, got {cfg.train_len}")
    m = cfg.model
    for key in ("d_model", "n_layers", "n_heads", "mlp_ratio"):
        if m[key] < 1:
            raise PosbenchError(f"model.{key} must be a positive integer, got {m[key]}")
    if m.d_model % m.n_heads:
        raise PosbenchError(f"model.d_model={m.d_model} is not divisible by model.n_heads={m.n_heads}")
    # building the encoding is cheap and runs every check on it: its name, its parameters (against
    # its Params dataclass) and its own constraints (e.g. RoPE's even head dimension)
    build_encoding(enc.name, ModelShape(m.d_model, m.n_heads, m.n_layers, cfg.train_len), encoding_params(cfg))
    check_eval(cfg.eval, cfg.train_len)
    if cfg.data.source not in SOURCES:
        raise PosbenchError(f"unknown data.source {cfg.data.source!r}; valid: {', '.join(SOURCES)}")
    if not 0 < cfg.data.val_fraction < 1:
        raise PosbenchError(f"data.val_fraction must be in (0, 1), got {cfg.data.val_fraction}")
    if cfg.logger.name not in LOGGERS:
        raise PosbenchError(f"unknown logger {cfg.logger.name!r}; valid: {', '.join(LOGGERS)}")
    if cfg.device not in ("auto", "cpu") and not str(cfg.device).startswith("cuda"):
        raise PosbenchError(f"unknown device {cfg.device!r}; valid: auto, cpu, cuda, cuda:N")
    check_runtime(cfg)
    rp = cfg.train.random_positions
    if rp is not None and rp < cfg.train_len:
        raise PosbenchError(f"train.random_positions={rp} must be at least train_len={cfg.train_len} (or null)")
    for key in ("steps", "batch_size", "val_every", "val_batches", "log_every", "checkpoint_every"):
        if cfg.train[key] < 1:
            raise PosbenchError(f"train.{key} must be a positive integer, got {cfg.train[key]}")


def check_runtime(cfg: DictConfig) -> None:
    """The speed settings shared by posbench-train and posbench-eval: attention path and threads."""
    if cfg.attention not in ATTENTION_SETTINGS:
        raise PosbenchError(f"unknown attention {cfg.attention!r}; valid: {', '.join(ATTENTION_SETTINGS)}")
    if cfg.get("threads") is not None and cfg.threads < 1:
        raise PosbenchError(f"threads must be a positive integer or null, got {cfg.threads}")


def check_multiples(multiples) -> None:
    if not multiples:
        raise PosbenchError("eval.multiples is empty; give positive multiples of train_len, e.g. [1,2,4,8,16]")
    if bad := [x for x in multiples if x <= 0]:
        raise PosbenchError(f"eval.multiples must be positive, got {bad[0]:g}; e.g. [1,2,4,8,16]")


RESERVED_ENCODING_KEYS = ("name", "lr_mult")  # read by the harness, not passed to the encoding


def encoding_params(cfg: DictConfig) -> dict:
    enc = OmegaConf.to_container(cfg.encoding, resolve=True)
    return {k: v for k, v in enc.items() if k not in RESERVED_ENCODING_KEYS}


def position_lr_mult(cfg: DictConfig) -> float:
    """Learning-rate multiplier of the encoding's own parameters (``lr_mult`` in its yaml)."""
    return float(cfg.encoding.get("lr_mult", 1.0))


def max_train_position(cfg: DictConfig) -> int:
    """Largest position index + 1 seen in training (random positions reach beyond train_len)."""
    return max(cfg.train_len, cfg.train.get("random_positions") or 0)


def eval_lengths(train_len: int, multiples) -> list[int]:
    """Window lengths for the evaluation multiples, rounded to whole tokens, sorted, unique."""
    return sorted({max(1, round(train_len * m)) for m in multiples})


# train keys that change how often we look, never what is learned
NON_IDENTITY_TRAIN_KEYS = ("log_every", "val_every", "val_batches", "checkpoint_every")


def run_identity(cfg: DictConfig) -> dict:
    """Everything that determines the trained weights, and nothing else (not paths, logger or eval)."""
    c = OmegaConf.to_container(cfg, resolve=True)
    data = {k: v for k, v in c["data"].items() if k != "cache_dir"}
    return {
        "encoding": c["encoding"],
        "model": c["model"],
        "data": data,
        "train": {k: v for k, v in c["train"].items() if k not in NON_IDENTITY_TRAIN_KEYS},
        "train_len": c["train_len"],
        "seed": c["seed"],
    }


def run_id(cfg: DictConfig) -> str:
    """Readable prefix + hash of the resolved identity: the same config always maps to the same run."""
    digest = hashlib.sha1(json.dumps(run_identity(cfg), sort_keys=True).encode()).hexdigest()[:10]
    return f"{cfg.encoding.name}_{cfg.model.name}_L{cfg.train_len}_s{cfg.seed}_{digest}"
