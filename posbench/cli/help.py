"""``--help`` and ``--version`` of posbench-train and posbench-eval: what the command does, its main
keys with their defaults (read from the settings classes, so the page cannot drift from the code),
examples and where the reference is. Hydra's own pages stay one flag away (``--hydra-help``,
``--cfg job``, ``--info``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from posbench.cli.config import CONF_DIR, EVAL_RUNTIME_KEYS, RUN_KEYS, group_options
from posbench.core.device import Runtime
from posbench.core.version import version_text  # noqa: F401 - posbench.cli.app's --version
from posbench.data.corpus import DataConfig
from posbench.evaluation.settings import EvalConfig
from posbench.model.transformer import ModelConfig
from posbench.spec import RunSpec
from posbench.training.trainer import TrainConfig

TRAIN = """\
posbench-train: train a toy byte-level language model with one positional encoding, score its
perplexity at multiples of the training length, and write the run directory
<runs_dir>/<run_id>/ (config, checkpoint, metrics). Run again, it skips complete runs, resumes
killed ones and scores only what complete runs miss. Every job is checked before the first starts.

usage: posbench-train [-m] [key=value ...]      every setting is a Hydra override
  -m, --multirun     a sweep: the cross product of every key=a,b,... (and a preset's sweep)
  --version          posbench's version, torch's, Python's and the device
  --cfg job          print the composed config instead of running (--hydra-help: Hydra's flags)
"""

TRAIN_EXAMPLES = """\
  posbench-train encoding=alibi model=small train_len=128
  posbench-train -m encoding=nope,rope,alibi train_len=64,128 seed=0,1,2
  posbench-train -m experiment=reference
  POSBENCH_JOBS=2 posbench-train -m hydra/launcher=local_parallel encoding=rope,alibi   # CPU: 1-thread runs side by side
  posbench-train encoding=rope data=local data.path=corpus/ 'runs_dir="runs/été"'   # quote non-ASCII values
"""

EVAL = """\
posbench-eval: score a finished run again from its checkpoint (other lengths, protocols or
evaluation-time variants) and add the records to its metrics.json and per_position.npz. It never
trains. Two evaluations of one run take turns (the run's lock), so both keep their records.
An eval.* key not given here is the run's own (its config.yaml: protocols, scored tokens, variants,
multiples), not the default below, except batch_tokens; the log names those taken from the run.

usage: posbench-eval run_dir=<run directory> [eval.key=value ...]
  --version          posbench's version, torch's, Python's and the device
  --cfg job          print the composed config instead of running (--hydra-help: Hydra's flags)
"""

EVAL_EXAMPLES = """\
  posbench-eval run_dir=runs/<run_id> eval.multiples=[1,2,4,8,16,32] eval.first_scored=2048 eval.segment=2048   # train_len 64
  posbench-eval run_dir=runs/<run_id> eval.rope_scaling=[linear,ntk,dynamic_ntk,yarn] eval.temperature=[0.1]
  posbench-eval run_dir=runs/<run_id> eval.protocols=[fixed_target] eval.attention_stats=true
"""

TRAIN_REFERENCE = """\
reference (in the posbench repository): docs/configuration.md (every key, group and preset),
docs/protocols.md (eval.*), docs/run-directory.md (what a run writes), docs/encodings.md
"""

EVAL_REFERENCE = """\
reference (in the posbench repository): docs/protocols.md (eval.*: protocols, token sets,
variants), docs/run-directory.md (metrics.json), docs/configuration.md
"""


def value(x: Any) -> str:
    """A default as an override writes it: null, true, [1,2,4], 0.002."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, (list, tuple)):
        return "[" + ",".join(value(v) for v in x) + "]"
    if isinstance(x, float):
        return f"{x:g}"
    return str(x)


def defaults(cls: type, prefix: str = "", keys: tuple[str, ...] | None = None) -> list[str]:
    """``prefix.key=default`` of a settings class's fields (``keys``: only these, in this order)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out = []
    for name in keys or tuple(fields):
        f = fields[name]
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        out.append(f"{prefix}{name}={value(default)}")
    return out


def wrap(items: list[str], indent: str = "  ", width: int = 100, sep: str = "  ", hang: str | None = None) -> str:
    """``items`` on lines of at most ``width`` characters (``hang``: the indent of the lines after the first)."""
    lines, line = [], indent
    for item in items:
        if len(line) + len(item) > width and line.strip():
            lines.append(line.rstrip())
            line = indent if hang is None else hang
        line += item + sep
    lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


def group_defaults(conf_dir: str) -> dict[str, str]:
    """The default option of each config group, from config.yaml's defaults list."""
    out = {}
    for entry in yaml.safe_load((Path(conf_dir) / "config.yaml").read_text()).get("defaults", []):
        if isinstance(entry, dict):
            ((key, option),) = entry.items()
            if not key.startswith("override") and option is not None:
                out[key] = str(option)
    return out


def help_text(config_name: str) -> str:
    """posbench-train's (``config``) or posbench-eval's (``evaluate``) help page."""
    if config_name == "evaluate":
        keys = ["run_dir=<required>", *defaults(Runtime, "", EVAL_RUNTIME_KEYS), *[k for k in defaults(EvalConfig, "eval.") if not k.startswith("eval.during_training")]]
        return (f"{EVAL}\nkeys (defaults; an eval.* key not given is the run's own, above):\n{wrap(keys)}\nexamples:\n{EVAL_EXAMPLES}\n{EVAL_REFERENCE}")
    options = group_options([])
    chosen = group_defaults(CONF_DIR)
    launchers = ["basic", *sorted(p.stem for p in (Path(CONF_DIR) / "hydra" / "launcher").glob("*.yaml"))]
    groups = []
    for group, default, all_options in [*((g, chosen[g], options.get(g, [])) for g in chosen),
                                        ("experiment", "(none)", options.get("experiment", [])),
                                        ("hydra/launcher", "basic", launchers)]:
        rest = [o for o in all_options if o != default]
        groups.append(wrap([f"{default}{';' if rest else ''}", *rest], indent=f"  {group:<16}", sep=" ",
                           width=100, hang=" " * 18).rstrip("\n"))
    keys = [*defaults(RunSpec, "", RUN_KEYS), *defaults(Runtime),
            *defaults(TrainConfig, "train.", ("steps", "batch_size", "lr", "warmup_steps", "min_lr_ratio", "schedule",
                                             "budgets", "checkpoint_every")),
            *defaults(ModelConfig, "model.", ("d_model", "n_layers", "n_heads")),
            *defaults(EvalConfig, "eval.", ("multiples", "protocols", "scored_tokens", "segment", "first_scored", "rope_scaling", "bca",
                                            "temperature", "during_training", "attention_stats")),
            *defaults(DataConfig, "data.", ("path", "cache_dir"))]
    return (f"{TRAIN}\nconfig groups (group=option; the default first):\n" + "\n".join(groups) +
            f"\n\nmain keys (defaults; --cfg job prints every key):\n{wrap(keys)}\nexamples:\n{TRAIN_EXAMPLES}\n"
            f"{TRAIN_REFERENCE}")
