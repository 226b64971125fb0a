"""Structured configs: the types Hydra checks every composed config against, and every value check.

Hydra/OmegaConf validate types (``train_len=abc`` fails); ``validate`` (posbench-train) and
``validate_eval`` (posbench-eval) check keys and values and raise a one-line ``PosbenchError``
naming the bad value and what is valid. posbench.cli runs them on every job of a command line
before the first one starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from posbench.data import VOCAB_SIZE
from posbench.device import check_device
from posbench.encodings import ModelShape, available, build_encoding
from posbench.encodings.rope import ROPE_SCALINGS
from posbench.errors import PosbenchError
from posbench.model import ModelConfig
from posbench.protocols import check_eval
from posbench.results import CONFIG, read_config
from posbench.tasks import available as available_tasks
from posbench.tasks import build_task

# the yaml tree ships inside the package (the repository's top-level conf/ is a link to it), so a
# non-editable install has it too; users add their own folders through hydra.searchpath
CONF_DIR = str(Path(__file__).resolve().parent / "conf")


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
    scored_tokens: int = 32768  # T: nonoverlapping and sliding score validation targets [S0, S0 + T) at every length
    first_scored: Optional[int] = None  # S0; None: 16 x train_len (history for every window up to 16x)
    target_tokens: Optional[int] = None  # fixed_target: final tokens of each document; None: train_len / 2
    target_docs: int = 64  # fixed_target: documents scored
    batch_tokens: int = 16384
    rope_scaling: List[str] = field(default_factory=list)  # extra rows for rope: linear, ntk, dynamic_ntk, yarn
    rope_factor: Optional[float] = None  # static scalings' s; None: the longest multiple (>= 1 when set)
    bca: List[str] = field(default_factory=lambda: ["xpos"])  # encodings also evaluated with blockwise causal attention
    # attention temperature c: rows <encoding>+temp<c> with every logit x (1 + c ln(L / train_len))
    temperature: List[float] = field(default_factory=list)
    # fractions of train.steps at which training stops briefly to score 1x and the longest multiple
    # (nonoverlapping, the same tokens as the final evaluation) into metrics["during_training"]
    during_training: List[float] = field(default_factory=list)
    # per layer and head: mean attention distance and entropy at every length (posbench/diagnostics.py),
    # over attention_examples windows of the validation text (a task run: examples of its task)
    attention_stats: bool = False
    attention_examples: int = 4


@dataclass
class ExtendConfig:
    """Continue a finished run (the parent: this config without ``extend``) at a longer window.
    ``length`` null: an ordinary run. See posbench/extend.py."""

    length: Optional[int] = None  # target window in tokens: a multiple of train_len, longer than it
    method: str = "none"  # none (plain continuation) | linear | ntk | yarn (RoPE, factor length / train_len)
    steps: int = 0  # fine-tuning steps at `length` (0: the parent's weights as they are, with the method)
    lr: Optional[float] = None  # null: train.lr x train.min_lr_ratio, where the parent's schedule ended
    warmup_steps: int = 0  # linear warm-up, then constant
    batch_size: Optional[int] = None  # windows per step; null: as many tokens per step as the parent


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
    task: Any = MISSING  # lm, or a synthetic task (posbench/tasks): free-form, checked against its Params
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
    retry_diverged: bool = False  # a diverged run is final; true trains it again from step 0
    extend: ExtendConfig = field(default_factory=ExtendConfig)


@dataclass
class EvaluateConfig:
    """posbench-eval: evaluate an existing run directory again."""

    eval: EvalConfig = MISSING
    run_dir: Optional[str] = None
    device: str = "auto"
    threads: Optional[int] = None
    attention: str = "auto"


# the schemas with every group filled by its defaults, so that every nested key can be looked up
SCHEMAS = {
    "config": lambda: Config(encoding={}, task={}, model=ModelConfig(), data=DataConfig(), train=TrainConfig(),
                             eval=EvalConfig(), logger=LoggerConfig()),
    "evaluate": lambda: EvaluateConfig(eval=EvalConfig()),
}


def register_configs() -> None:
    cs = ConfigStore.instance()
    cs.store(name="posbench_schema", node=Config)
    cs.store(name="posbench_eval_schema", node=EvaluateConfig)


def schema(config_name: str) -> DictConfig:
    """The structured schema of ``config`` (posbench-train) or ``evaluate`` (posbench-eval)."""
    return OmegaConf.structured(SCHEMAS[config_name]())


SOURCES = ("stdlib", "local", "hub")
ATTENTION_SETTINGS = ("auto", "flex", "chunked")
LOGGERS = ("none", "wandb")
WANDB_MODES = ("offline", "online", "disabled")


FREE_FORM = ("encoding", "task")


def unknown_keys(cfg: DictConfig, node: DictConfig, prefix: str = "") -> list[str]:
    """Keys of ``cfg`` that its schema does not have (``+train.stpes=5`` adds one; Hydra allows
    it). ``encoding`` and ``task`` are free-form here: their keys are checked against their Params."""
    out = []
    for key in cfg.keys():
        if key == "hydra" and not prefix:
            continue
        if key not in node.keys():
            out.append(f"{prefix}{key}")
        elif key not in FREE_FORM and isinstance(node[key], DictConfig) and isinstance(cfg[key], DictConfig):
            out += unknown_keys(cfg[key], node[key], f"{prefix}{key}.")
    return out


def check_keys(cfg: DictConfig, config_name: str) -> None:
    node = schema(config_name)
    if bad := unknown_keys(cfg, node):
        parent, _, _ = bad[0].rpartition(".")
        valid = sorted(OmegaConf.select(node, parent).keys() if parent else node.keys())
        where = f"of {parent}" if parent else "at the top level"
        raise PosbenchError(f"unknown config key {bad[0]!r}; valid keys {where}: {', '.join(valid)}")


def check_missing(cfg: DictConfig) -> None:
    """Values a config group leaves to the user (``???``, e.g. data=local's path)."""
    missing = []
    for key in cfg.keys():
        if key == "hydra":  # Hydra's own node has values known only inside a job
            continue
        if OmegaConf.is_missing(cfg, key):
            missing.append(str(key))
        elif isinstance(cfg[key], DictConfig):
            missing += sorted(f"{key}.{k}" for k in OmegaConf.missing_keys(cfg[key]))
    if missing:
        raise PosbenchError(f"{missing[0]} has no value; give it on the command line, e.g. {missing[0]}=...")


def validate(cfg: DictConfig) -> None:
    """Every check of one posbench-train job that needs no data; raises PosbenchError with one line."""
    check_keys(cfg, "config")
    check_missing(cfg)
    enc = cfg.encoding
    if not isinstance(enc, DictConfig) or "name" not in enc:
        raise PosbenchError(f"encoding config has no 'name'; valid names: {', '.join(available())}")
    if position_lr_mult(cfg) <= 0:
        raise PosbenchError(f"encoding.lr_mult must be positive, got {cfg.encoding.lr_mult}")
    if cfg.train_len < 1:
        raise PosbenchError(f"train_len must be a positive integer, got {cfg.train_len}")
    m = cfg.model
    for key in ("d_model", "n_layers", "n_heads", "mlp_ratio"):
        if m[key] < 1:
            raise PosbenchError(f"model.{key} must be a positive integer, got {m[key]}")
    if m.vocab_size < VOCAB_SIZE:
        raise PosbenchError(f"model.vocab_size must be at least {VOCAB_SIZE} (tokens are bytes), got {m.vocab_size}")
    if not 0 <= m.dropout < 1:
        raise PosbenchError(f"model.dropout must be in [0, 1), got {m.dropout}")
    if m.d_model % m.n_heads:
        raise PosbenchError(f"model.d_model={m.d_model} is not divisible by model.n_heads={m.n_heads}")
    # building the encoding is cheap and runs every check on it: its name, its parameters (types and
    # values, against its Params dataclass) and its own constraints (e.g. RoPE's even head dimension)
    build_encoding(enc.name, ModelShape(m.d_model, m.n_heads, m.n_layers, cfg.train_len, max_train_position(cfg)),
                   encoding_params(cfg))
    check_eval(cfg.eval, cfg.train_len)
    check_task(cfg)
    if bad := [s for s in cfg.eval.rope_scaling if s not in ROPE_SCALINGS]:
        raise PosbenchError(f"unknown eval.rope_scaling {bad[0]!r}; valid: {', '.join(ROPE_SCALINGS)}")
    if bad := [e for e in cfg.eval.bca if e not in available()]:
        raise PosbenchError(f"unknown encoding in eval.bca: {bad[0]!r}; valid: {', '.join(available())}")
    if bad := [f for f in cfg.eval.during_training if not 0 < f <= 1]:
        raise PosbenchError(f"eval.during_training holds fractions of train.steps in (0, 1], got {bad[0]:g}")
    if cfg.eval.during_training and "nonoverlapping" not in cfg.eval.protocols:
        raise PosbenchError("eval.during_training scores the nonoverlapping protocol: add it to eval.protocols "
                            f"(got {list(cfg.eval.protocols)}) or set eval.during_training=[]")
    if cfg.eval.rope_factor is not None and cfg.eval.rope_factor < 1:
        raise PosbenchError(f"eval.rope_factor must be at least 1 (or null), got {cfg.eval.rope_factor:g}")
    d = cfg.data
    if d.source not in SOURCES:
        raise PosbenchError(f"unknown data.source {d.source!r}; valid: {', '.join(SOURCES)}")
    if not 0 < d.val_fraction < 1:
        raise PosbenchError(f"data.val_fraction must be in (0, 1), got {d.val_fraction}")
    if d.max_train_bytes is not None and d.max_train_bytes < 1:
        raise PosbenchError(f"data.max_train_bytes must be positive (or null), got {d.max_train_bytes}")
    if len(d.doc_separator.encode()) > 1:
        raise PosbenchError(f"data.doc_separator must be one byte (or empty), got {d.doc_separator!r}")
    if cfg.logger.name not in LOGGERS:
        raise PosbenchError(f"unknown logger {cfg.logger.name!r}; valid: {', '.join(LOGGERS)}")
    if cfg.logger.mode not in WANDB_MODES:
        raise PosbenchError(f"unknown logger.mode {cfg.logger.mode!r}; valid: {', '.join(WANDB_MODES)}")
    check_runtime(cfg)
    rp = cfg.train.random_positions
    if rp is not None and rp < cfg.train_len:
        raise PosbenchError(f"train.random_positions={rp} must be at least train_len={cfg.train_len} (or null)")
    t = cfg.train
    for key in ("steps", "batch_size", "val_every", "val_batches", "log_every", "checkpoint_every"):
        if t[key] < 1:
            raise PosbenchError(f"train.{key} must be a positive integer, got {t[key]}")
    for key in ("lr", "grad_clip"):
        if not t[key] > 0:
            raise PosbenchError(f"train.{key} must be positive, got {t[key]:g}")
    if t.warmup_steps < 0 or t.weight_decay < 0 or not 0 <= t.min_lr_ratio <= 1:
        key = "warmup_steps" if t.warmup_steps < 0 else "weight_decay" if t.weight_decay < 0 else "min_lr_ratio"
        raise PosbenchError(f"train.{key}={t[key]} is out of range (warmup_steps, weight_decay >= 0; min_lr_ratio in [0, 1])")
    for key in ("beta1", "beta2"):
        if not 0 <= t[key] < 1:
            raise PosbenchError(f"train.{key} must be in [0, 1), got {t[key]}")
    check_extend(cfg)
    check_writable_dir(cfg.runs_dir, "runs_dir")


def check_task(cfg: DictConfig) -> None:
    """A synthetic task's parameters, and what does not combine with one."""
    if cfg.eval.attention_examples < 1:
        raise PosbenchError(f"eval.attention_examples must be a positive integer, got {cfg.eval.attention_examples}")
    task = task_of(cfg)
    if task is None:
        return
    if cfg.train_len < task.min_length():
        raise PosbenchError(f"task {task.name} needs windows of at least {task.min_length()} tokens, got "
                            f"train_len={cfg.train_len}")
    if cfg.eval.during_training:
        raise PosbenchError("eval.during_training scores perplexity: set eval.during_training=[] for a task run "
                            f"(task={task.name})")
    if (cfg.get("extend") or {}).get("length") is not None:
        raise PosbenchError(f"extend continues language models: set extend.length=null for a task run (task={task.name})")


def task_of(cfg: DictConfig):
    """The run's synthetic task (posbench/tasks), or None for language modelling (and for runs made
    before tasks existed, whose config has no ``task``)."""
    t = cfg.get("task")
    if t is None:
        return None
    if not isinstance(t, DictConfig) or "name" not in t:
        raise PosbenchError(f"task config has no 'name'; valid names: {', '.join(available_tasks())}")
    params = {k: v for k, v in OmegaConf.to_container(t, resolve=True).items() if k != "name"}
    return build_task(t.name, params)


EXTEND_METHODS = ("none", "linear", "ntk", "yarn")


def check_extend(cfg: DictConfig) -> None:
    """An extension run (``extend.length`` set) continues its parent at a longer window."""
    x = cfg.get("extend")
    if x is None or x.length is None:
        return
    if x.length <= cfg.train_len or x.length % cfg.train_len:
        raise PosbenchError(f"extend.length={x.length} must be a multiple of train_len={cfg.train_len} longer than it "
                            f"(e.g. {4 * cfg.train_len})")
    if x.method not in EXTEND_METHODS:
        raise PosbenchError(f"unknown extend.method {x.method!r}; valid: {', '.join(EXTEND_METHODS)}")
    m = cfg.model
    enc = build_encoding(cfg.encoding.name, ModelShape(m.d_model, m.n_heads, m.n_layers, cfg.train_len,
                                                       max_train_position(cfg)), encoding_params(cfg))
    enc.extend_to(x.method, x.length / cfg.train_len)  # refuses a method the encoding does not have
    if (reason := enc.undefined_reason(x.length)) is not None:
        raise PosbenchError(f"{cfg.encoding.name} cannot be extended to {x.length} tokens: {reason}")
    if x.steps < 0 or x.warmup_steps < 0:
        raise PosbenchError(f"extend.steps and extend.warmup_steps must be >= 0, got {x.steps} and {x.warmup_steps}")
    if x.lr is not None and not x.lr > 0:
        raise PosbenchError(f"extend.lr must be positive (or null), got {x.lr:g}")
    if x.batch_size is not None and x.batch_size < 1:
        raise PosbenchError(f"extend.batch_size must be a positive integer (or null), got {x.batch_size}")
    if cfg.eval.rope_scaling:
        raise PosbenchError("an extension run is evaluated with its own method: set eval.rope_scaling=[] "
                            f"(got {list(cfg.eval.rope_scaling)})")
    if cfg.eval.during_training:
        raise PosbenchError("eval.during_training is for training from scratch: set eval.during_training=[] "
                            "for an extension run")
    if cfg.train.random_positions is not None:
        raise PosbenchError("extend does not combine with train.random_positions; set train.random_positions=null")


def validate_eval(cfg: DictConfig) -> DictConfig:
    """Every check of a posbench-eval command; returns the run's own (training) config."""
    check_keys(cfg, "evaluate")
    check_missing(cfg)
    if cfg.run_dir is None:
        raise PosbenchError("give the run to evaluate: posbench-eval run_dir=runs/<run_id>")
    run_dir = Path(cfg.run_dir).expanduser()
    if not (run_dir / CONFIG).is_file():
        raise PosbenchError(f"run_dir={cfg.run_dir} is not a run directory (no {CONFIG}); give a folder that "
                            "posbench-train made, e.g. runs/<run_id>")
    try:
        run_cfg = read_config(run_dir)
        train_len = int(run_cfg.train_len)
    except Exception as e:  # noqa: BLE001 - unreadable YAML, no train_len
        raise PosbenchError(f"{run_dir / CONFIG} is not a posbench run config ({e})") from e
    check_runtime(cfg)
    check_eval(cfg.eval, train_len)
    check_writable_dir(run_dir, "run_dir")
    return run_cfg


def check_runtime(cfg: DictConfig) -> None:
    """The settings shared by posbench-train and posbench-eval: device, attention path and threads."""
    check_device(cfg.device)
    if cfg.attention not in ATTENTION_SETTINGS:
        raise PosbenchError(f"unknown attention {cfg.attention!r}; valid: {', '.join(ATTENTION_SETTINGS)}")
    if cfg.get("threads") is not None and cfg.threads < 1:
        raise PosbenchError(f"threads must be a positive integer or null, got {cfg.threads}")


def check_writable_dir(path: str, what: str) -> None:
    """A folder we can create or write into (checked before anything runs, so nothing is half done)."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise PosbenchError(f"{what}={path} is a file, not a folder; give a folder to write runs into")
    probe = p
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise PosbenchError(f"{what}={path} cannot be created: {probe} is a file")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise PosbenchError(f"{what}={path} is not writable ({probe} is read-only); give a folder you can write to")


RESERVED_ENCODING_KEYS = ("name", "lr_mult")  # read by the harness, not passed to the encoding


def encoding_params(cfg: DictConfig) -> dict:
    enc = OmegaConf.to_container(cfg.encoding, resolve=True)
    return {k: v for k, v in enc.items() if k not in RESERVED_ENCODING_KEYS}


def position_lr_mult(cfg: DictConfig) -> float:
    """Learning-rate multiplier of the encoding's own parameters (``lr_mult`` in its yaml)."""
    try:
        return float(cfg.encoding.get("lr_mult", 1.0))
    except (TypeError, ValueError):
        raise PosbenchError(f"encoding.lr_mult must be a number, got {cfg.encoding.get('lr_mult')!r}") from None


def max_train_position(cfg: DictConfig) -> int:
    """Largest position index + 1 seen in training (random positions reach beyond train_len)."""
    return max(cfg.train_len, cfg.train.get("random_positions") or 0)
