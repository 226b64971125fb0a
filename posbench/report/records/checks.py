"""What the report reads of a run, checked before any of it is used.

posbench.store.rundir.check_metrics checks the shape every reader relies on (status, ids, records with their
keys). The report computes with more: record values (a perplexity stored as "12.3", a multiple
that is null), the during-training, task and attention records, the training curve and the
config's settings. A run with any of these wrong would end the report in a traceback half way
through; checked here, it is skipped with one warning and listed as unreadable, as runs with a
missing file are. Each check raises ValueError naming the file, the record and the field.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from posbench.store.identity import OLD_ENCODING_BEHAVIOUR
from posbench.store.rundir import CONFIG, HISTORY, METRICS, PER_POSITION


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _integer(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _positive(v: Any) -> bool:
    return _number(v) and math.isfinite(v) and v > 0


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _text(v: Any) -> bool:
    return isinstance(v, str)


TEXT, NUMBER, INTEGER, POSITIVE = (_text, "a string"), (_number, "a number"), (_integer, "an integer"), (_positive, "a positive number")
OPTIONAL_NUMBER, OPTIONAL_TEXT = (_optional(_number), "a number or null"), (_optional(_text), "a string or null")
LENGTH = (lambda v: _integer(v) and v > 0, "a positive integer")

# per record list of metrics.json: the fields the report computes with, and what each must be
RECORDS = {
    "evaluations": {"variant": TEXT, "protocol": TEXT, "length": LENGTH, "multiple": POSITIVE, "ppl": OPTIONAL_NUMBER,
                    "token_set": OPTIONAL_TEXT},
    "during_training": {"variant": TEXT, "protocol": TEXT, "length": LENGTH, "multiple": POSITIVE,
                        "ppl": OPTIONAL_NUMBER, "step": INTEGER, "train_tokens": NUMBER},
    "task_evaluations": {"variant": TEXT, "task": TEXT, "length": LENGTH, "multiple": POSITIVE,
                         "condition": OPTIONAL_NUMBER, "example_set": TEXT, "exact": OPTIONAL_NUMBER,
                         "token_accuracy": OPTIONAL_NUMBER},
    "attention": {"source": TEXT, "length": LENGTH, "multiple": POSITIVE, "layer": INTEGER, "head": INTEGER,
                  "mean_distance": OPTIONAL_NUMBER, "entropy": OPTIONAL_NUMBER},
}
OPTIONAL_FIELDS = {"token_set"}  # records made before token sets were named have none
RUN_FACTS = {"model": TEXT, "task": OPTIONAL_TEXT, "train_steps": OPTIONAL_NUMBER, "train_tokens": OPTIONAL_NUMBER,
             "final_val_loss": OPTIONAL_NUMBER}


def check_records(m: dict) -> None:
    """The run facts and every record the report reads (``m`` has passed posbench.store.rundir.check_metrics)."""
    for key, (ok, what) in RUN_FACTS.items():
        if not ok(m.get(key)):
            raise ValueError(f"{METRICS}: {key!r} is {m.get(key)!r}, not {what}")
    for kind, fields in RECORDS.items():
        records = m.get(kind)
        if records is None and kind != "evaluations":
            continue  # runs made before the kind existed, and language-model runs' task records
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise ValueError(f"{METRICS}: {kind!r} is not a list of records")
        for i, r in enumerate(records):
            for key, (ok, what) in fields.items():
                if key not in r and key in OPTIONAL_FIELDS:
                    continue
                if key not in r:
                    raise ValueError(f"{METRICS}: {kind} record {i} has no {key!r}")
                if not ok(r[key]):
                    raise ValueError(f"{METRICS}: {kind} record {i} has {key} {r[key]!r}, not {what}")


def check_history(history: pd.DataFrame | None) -> pd.DataFrame | None:
    """The training curve, with a step in every record and numbers (or null) for the losses
    plotted; a column of nulls only comes back as numbers (NaN)."""
    if history is None or history.empty:
        return history
    for col in ("step", "loss", "val_loss"):
        if col not in history:
            continue
        values = history[col]
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            # an object column: nulls beside numbers are fine, anything else is not
            if (bad := next((v for v in values if not (v is None or _number(v))), None)) is not None:
                raise ValueError(f"{HISTORY}: {col} {bad!r} is not a number")
        if col == "step" and values.isna().any():
            raise ValueError(f"{HISTORY}: a record has step null")
        history[col] = pd.to_numeric(values)
    return history


def check_per_position(arrays: dict[str, np.ndarray]) -> None:
    for key, a in arrays.items():
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.number):
            raise ValueError(f"{PER_POSITION}: {key!r} is not a curve of numbers ({a.dtype}, shape {a.shape})")


def parse_config(text: str) -> DictConfig:
    """A run's config.yaml, with the settings the report reads checked: ``encoding.name``,
    ``train.lr`` (and ``encoding.lr_mult`` where set). An empty file is no config."""
    try:
        cfg = OmegaConf.create(text) if text.strip() else None
    except Exception as e:  # noqa: BLE001 - a YAML error, or a scalar
        raise ValueError(f"{CONFIG} is not a YAML mapping ({type(e).__name__})") from None
    if not isinstance(cfg, DictConfig):
        raise ValueError(f"{CONFIG} is empty" if cfg is None else f"{CONFIG} is not a mapping")
    try:
        encoding, train = cfg.get("encoding"), cfg.get("train")
        if not isinstance(encoding, DictConfig) or not isinstance(encoding.get("name"), str):
            raise ValueError(f"{CONFIG} has no encoding.name")
        if not isinstance(train, DictConfig) or not _number(train.get("lr")):
            raise ValueError(f"{CONFIG} has no number train.lr")
        if not _number(encoding.get("lr_mult", 1.0)):
            raise ValueError(f"{CONFIG}: encoding.lr_mult {encoding.get('lr_mult')!r} is not a number")
    except ValueError:
        raise
    except Exception as e:  # noqa: BLE001 - an interpolation that does not resolve, ...
        raise ValueError(f"{CONFIG}: {type(e).__name__}: {e}") from None
    return cfg


# settings a report reads apart on purpose: a learning-rate grid's (posbench/report/analysis/tuning.py)
APART = {"lr_mult"}


def pooled_encoding_settings(runs: pd.DataFrame, configs: dict[str, DictConfig | None]) -> str | None:
    """A report's rows are (encoding, model, train_len[, task]) with seeds as the unit of evidence, so
    runs of one row whose encoding settings differ (``encoding=t5`` with ``encoding.bias_scale=none`` and
    ``sqrt_dhead``), or that were trained on randomized positions beside runs that were not
    (``train.random_positions``: such a run's plain-position row has the plain runs' name; or on integer
    beside real random positions, ``train.random_positions_kind``: both rows are named +randpos), would be
    pooled as seeds of one row. The first such row in one line (the setting, its values and how many
    runs have each, and the fix), None where there is none. A setting one config lacks (written before
    it existed) is not compared, except one whose value before it existed is known (store/identity.py
    ``OLD_ENCODING_BEHAVIOUR``: t5's ``bias_scale`` none), read at that value."""
    done = runs[runs["status"] == "completed"]
    keys = [k for k in ("encoding", "model", "train_len", "task") if k in done]
    for key, group in done.groupby(keys, dropna=False, sort=True):
        settings = []
        for d in group["run_dir"]:
            cfg = configs.get(d)
            if cfg is None or not isinstance(cfg.get("encoding"), DictConfig):
                continue
            enc = OmegaConf.to_container(cfg.encoding, resolve=False)
            enc = {**OLD_ENCODING_BEHAVIOUR.get(enc.get("name"), {}), **enc}  # an older config: the value it had
            mine = {f"encoding.{k}": v for k, v in enc.items() if k not in APART}
            train = cfg.get("train")
            mine["train.random_positions"] = train.get("random_positions") if isinstance(train, DictConfig) else None
            if mine["train.random_positions"] is not None:  # integer or real positions: two rows of one name (+randpos)
                mine["train.random_positions_kind"] = train.get("random_positions_kind", "integer")
            settings.append(mine)
        for name in sorted({k for s in settings for k in s}):
            values = ["null" if s[name] is None else repr(s[name]) for s in settings if name in s]  # as --where reads it
            if len(values) < len(settings) or len(set(values)) < 2:
                continue  # a setting some configs lack is not compared
            counts = ", ".join(f"{v}: {values.count(v)}" for v in sorted(set(values)))
            row = ", ".join(f"{k} {v}" for k, v in zip(keys, key if isinstance(key, tuple) else (key,)) if pd.notna(v))
            return (f"runs of one row ({row}) differ in {name} ({counts} runs): a report would pool them as "
                    f"seeds of one row; report them apart (--where {name}=VALUE, or separate folders)")
    return None
