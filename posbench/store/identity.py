"""A run's identity: the settings that decide its results (``run_identity``) and the id made from them
(``run_id``, ``trunk_id``), so that a sweep skips what is done and a changed setting is a new run.
Settings that cannot change a result (logging intervals) are left out, and so are new settings at
their old behaviour, so that old runs keep their ids."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from omegaconf import DictConfig, OmegaConf

from posbench.data.tokenizer import TokenizerConfig

# train keys that change how often we look, never what is learned
NON_IDENTITY_TRAIN_KEYS = ("log_every", "val_every", "val_batches", "checkpoint_every")


def run_identity(config: Mapping[str, Any]) -> dict:
    """Everything that determines the trained weights, and nothing else (not paths, logger or eval).
    ``config``: a resolved config (RunSpec.resolved(), or a run's saved config.yaml)."""
    c = OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else config
    data = {k: v for k, v in c["data"].items() if k != "cache_dir"}
    if (data.get("tokenizer") or {}).get("kind", "byte") == "byte":  # byte runs keep the ids they always had
        data.pop("tokenizer", None)
    identity = {
        "encoding": encoding_settings(c["encoding"]),
        "model": model_settings(c["model"]),
        "data": data,
        "train": schedule_identity(train_settings({k: v for k, v in c["train"].items() if k not in NON_IDENTITY_TRAIN_KEYS})),
        "train_len": c["train_len"],
        "seed": c["seed"],
    }
    if (c.get("extend") or {}).get("length") is not None:  # ordinary runs keep the ids they always had
        identity["extend"] = c["extend"]
    task = c.get("task") or {"name": "lm"}
    if task["name"] != "lm":  # language models keep their ids; the evaluation grid (eval_*) trains nothing
        identity["task"] = task_settings({k: v for k, v in task.items() if not k.startswith("eval_")})
    return identity


# train settings added after runs were made, at the value those runs had: left out of the id
OLD_TRAIN_BEHAVIOUR = {
    "random_positions_kind": "integer",  # every randomized-position run before it drew integers
}


def train_settings(settings: dict) -> dict:
    """The ``train`` section without the settings added later at the value every run before them had."""
    return {k: v for k, v in settings.items() if k not in OLD_TRAIN_BEHAVIOUR or OLD_TRAIN_BEHAVIOUR[k] != v}


# the schedule keys that came with warmup-stable-decay; a cosine run's weights do not depend on them
WSD_KEYS = ("schedule", "cooldown", "cooldown_shape", "budgets")


def schedule_identity(train: dict) -> dict:
    """The ``train`` section as run ids name it. A cosine run (every run made before ``schedule``
    existed) leaves out the WSD keys, so that it keeps its id; a WSD run leaves out
    ``min_lr_ratio`` (it cools down to 0) and ``budgets``: a branch is the run of its budget's
    steps, with that run's id (posbench/jobs/branches.py)."""
    if train.get("schedule", "cosine") == "cosine":
        return {k: v for k, v in train.items() if k not in WSD_KEYS}
    return {k: v for k, v in train.items() if k not in ("min_lr_ratio", "budgets")}


# encoding settings added after runs were made, at the value those runs had: left out of the id
OLD_ENCODING_BEHAVIOUR = {
    "t5": {"bias_scale": "none"},  # every T5 run before it had the unscaled table
    "alibi": {"num_heads": None},  # every ALiBi run before it had ALiBi on all heads
}


def encoding_settings(settings: dict) -> dict:
    """The ``encoding`` section as run ids name it: a setting added later (OLD_ENCODING_BEHAVIOUR)
    is left out at the value every run before it had, so that those runs keep their ids and a
    config that asks for that value again finds them."""
    old = OLD_ENCODING_BEHAVIOUR.get(settings.get("name"), {})
    return {k: v for k, v in settings.items() if k not in old or old[k] != v}


# model settings added after runs were made, at the value those runs had: left out of the id
OLD_MODEL_BEHAVIOUR = {
    "mixers": ["attention"], "mixer_params": {},  # every run before mixers was all attention
    "canon": "",  # and had no Canon layers
    "init": "gpt2",  # every run before the setting had GPT-2's initial weights
}


def model_settings(settings: dict) -> dict:
    """The ``model`` section as run ids name it: the mixer pattern of a plain transformer (every
    layer attention, no mixer parameters) and no Canon layers are left out, so that every run made
    before mixers and Canon layers keeps its id."""
    return {k: v for k, v in settings.items() if k not in OLD_MODEL_BEHAVIOUR or list_or_dict(v) != OLD_MODEL_BEHAVIOUR[k]}


def list_or_dict(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else dict(value) if isinstance(value, Mapping) else value


def mixers_label(model: Mapping[str, Any]) -> str:
    """A readable tag of a model's mixer pattern for its run id (``gdn3-attention1``), "" for a plain
    transformer: a hybrid never shares a name prefix with the all-attention run of its encoding."""
    mixers = [str(m) for m in (model.get("mixers") or ["attention"])]
    if mixers == ["attention"]:
        return ""
    runs: list[list] = []
    for m in mixers:
        if runs and runs[-1][0] == m:
            runs[-1][1] += 1
        else:
            runs.append([m, 1])
    return "-".join(f"{safe_name(m)}{n}" for m, n in runs)


# task settings added after runs were made, at the value those runs had: left out of the id
OLD_TASK_BEHAVIOUR = {
    "*": {"loss": "answer",  # every task run trained before ``task.loss`` existed
          "curriculum": [], "stage_steps": 1000},  # and before curricula (posbench/tasks/curriculum.py): none
    # MQAR's levers: the generator every earlier MQAR run trained on
    "mqar": {"alphabet": 64, "train_queries": "end", "power_a": 0.01, "curriculum": [], "stage_steps": 1000},
}


def task_settings(settings: dict) -> dict:
    """A task's settings as run ids and evaluation example sets name them: a setting added later
    (OLD_TASK_BEHAVIOUR, e.g. ``loss: answer``) is left out at the value every run before it had, so
    that those runs keep their ids and their records their example set."""
    old = {**OLD_TASK_BEHAVIOUR["*"], **OLD_TASK_BEHAVIOUR.get(settings.get("name"), {})}
    return {k: v for k, v in settings.items() if k not in old or list_or_dict(v) != old[k]}


def run_id(cfg: Mapping[str, Any]) -> str:
    """Readable prefix + hash of the resolved identity: the same config always maps to the same run
    (an extension run adds its target, method and steps: ``..._s0_x256-yarn-ft100_<hash>``; a task
    run its task: ``..._s0_passkey_<hash>``)."""
    digest = hashlib.sha1(json.dumps(run_identity(cfg), sort_keys=True).encode()).hexdigest()[:10]
    x = cfg.get("extend")
    ext = "" if x is None or x.get("length") is None else \
        f"x{x['length']}{'' if x['method'] == 'none' else '-' + x['method']}-ft{x['steps']}_"
    task = (cfg.get("task") or {}).get("name", "lm")
    ext += "" if task == "lm" else f"{task}_"
    ext += "" if (tok := tokenizer_label(cfg)) == "byte" else f"{tok}_"
    ext += f"{mx}_" if (mx := mixers_label(cfg["model"])) else ""
    return f"{safe_name(cfg['encoding']['name'])}_{cfg['model']['name']}_L{cfg['train_len']}_s{cfg['seed']}_{ext}{digest}"


def trunk_id(cfg: Mapping[str, Any], recording: Mapping[str, Any]) -> str:
    """The id of the WSD trunk that the branches of a ``train.budgets`` config start from: the run
    identity without what only the branches' cool-downs depend on (steps, cooldown and its shape),
    so that every budget of a configuration, asked for now or later, shares one trunk; plus what
    the trunk records for its branches (``recording``, posbench.jobs.branches.recording)."""
    identity = run_identity(cfg)
    identity["train"] = {k: v for k, v in identity["train"].items() if k not in ("steps", "cooldown", "cooldown_shape")}
    digest = hashlib.sha1(json.dumps({"trunk": identity, "recording": recording}, sort_keys=True).encode()).hexdigest()[:10]
    task = (cfg.get("task") or {}).get("name", "lm")
    return (f"{safe_name(cfg['encoding']['name'])}_{cfg['model']['name']}_L{cfg['train_len']}_s{cfg['seed']}_"
            f"{'' if task == 'lm' else task + '_'}trunk_{digest}")


def tokenizer_label(cfg: Mapping[str, Any]) -> str:
    """``byte``, or the subword tokenizer of a resolved config as run ids name it (``bpe1024``)."""
    t = (cfg.get("data") or {}).get("tokenizer") or {}
    return safe_name(TokenizerConfig(**{k: v for k, v in t.items() if k in ("kind", "vocab_size", "path", "name")}).label)


def safe_name(name: str) -> str:
    """A plug-in named by its path (``mypkg.enc:MyEnc``) in a folder name: ':' and '/' become '-'."""
    return name.replace(":", "-").replace("/", "-")
