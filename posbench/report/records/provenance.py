"""What a reader needs besides the numbers: how the runs were made (commands), on what
(environment, corpus) and with which settings (each run's resolved config)."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Mapping

import pandas as pd
import yaml
from omegaconf import DictConfig, OmegaConf

from posbench.core.paths import portable

log = logging.getLogger("posbench")

# keys that differ between runs for reasons that say nothing about the experiment
NOISE_KEYS = ("runs_dir",)


def flat_config(cfg: DictConfig) -> dict:
    """A run's settings as {a.b: value}, a path in them portable (posbench/core/paths.py)."""
    return {k: portable(v) if isinstance(v, str) else v
            for k, v in _flatten(OmegaConf.to_container(cfg)) if k not in NOISE_KEYS}


def _flatten(tree: dict, prefix: str = ""):
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def config_split(runs: pd.DataFrame, configs: Mapping[str, DictConfig]) -> tuple[dict, pd.DataFrame]:
    """(settings shared by every run, one row per run with the settings that differ). Together
    they give each run's full resolved config. ``configs``: by run directory."""
    flats = {rid: flat_config(configs[d]) for rid, d in zip(runs["run_id"], runs["run_dir"]) if d in configs}
    if not flats:
        return {}, pd.DataFrame()
    keys = list(dict.fromkeys(k for flat in flats.values() for k in flat))
    # shared: present in every run with one value; a key only some encodings have always differs
    shared = {k: v for k, v in next(iter(flats.values())).items()
              if all(k in f and repr(f[k]) == repr(v) for f in flats.values())}
    differing = [k for k in keys if k not in shared]
    # an encoding's own parameters go into one column: each encoding has different ones
    params = [k for k in differing if k.startswith("encoding.") and k != "encoding.name"]
    rows = []
    for rid, f in flats.items():
        row = {"run_id": rid, **{k: _text(f[k]) if k in f else "" for k in differing if k not in params}}
        if params:
            row["encoding parameters"] = ", ".join(f"{k.removeprefix('encoding.')}={_text(f[k])}" for k in params if k in f)
        rows.append(row)
    return shared, pd.DataFrame(rows)


def _text(v) -> str:
    """A config value as the YAML one would write (null, lists inline)."""
    if isinstance(v, float) and math.isnan(v):
        return "null"
    return yaml.safe_dump(_plain(v), default_flow_style=True).strip().removesuffix("...").strip()


def nested_yaml(flat: dict) -> str:
    """A flat {a.b: v} dict back to nested YAML, for reading."""
    tree: dict = {}
    for key, value in sorted(flat.items()):
        node = tree
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = _plain(value)
    return yaml.safe_dump(tree, sort_keys=True, default_flow_style=None)


def _plain(v):
    if hasattr(v, "item"):  # numpy scalar
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def environment(runs: pd.DataFrame) -> pd.DataFrame:
    """Distinct (device, torch, python, posbench, corpus) combinations and how many runs used each."""
    rows = []
    for _, m in runs.iterrows():
        corpus = m["corpus"] if isinstance(m["corpus"], dict) else {}
        rows.append({
            "device": m["device"], "torch": m["torch_version"], "python": m["python"],
            "posbench": m["posbench_version"],
            "corpus": f"{corpus.get('source')} {corpus.get('hash') or corpus.get('fingerprint') or ''}".strip(),
            "train tokens": corpus.get("train_tokens"), "val tokens": corpus.get("val_tokens"),
        })
    env = pd.DataFrame(rows)
    return env.value_counts(dropna=False).rename("runs").reset_index()


def commands(runs_dir: Path, runs: pd.DataFrame) -> list[str]:
    """The commands that made these runs: each Hydra sweep's overrides (multirun.yaml in the
    sweep folder), and the per-run command recorded in metrics.json for runs outside a sweep."""
    found = []
    for f in sorted(Path(runs_dir).rglob("multirun.yaml")):
        try:
            task = list(OmegaConf.load(f).hydra.overrides.task or [])
        except Exception as e:  # noqa: BLE001 - torn or edited by hand: the report goes on without it
            log.warning("ignoring unreadable %s (%s)", f, type(e).__name__)
            continue
        found.append("posbench-train -m " + " ".join(str(t) for t in task))
    for cmds in runs["commands"]:
        found.extend(cmds if isinstance(cmds, list) else [])
    return list(dict.fromkeys(found))  # unique, in order


def shown_runs(ctx) -> pd.DataFrame:
    """The runs a report's provenance shows (each with its config): the compared language models, and
    the task runs beside them (``ctx``: the ReportContext)."""
    return ctx.completed if ctx.task_runs.empty or not ctx.has_lm else pd.concat([ctx.completed, ctx.task_runs])


def shown_commands(ctx) -> list[str]:
    """The commands of the shown runs: found below the runs' folders (once per report: the provenance
    section and the manifest share them, and an unreadable sweep record is warned about once), or as
    the committed report kept them (a rebuild)."""
    if ctx.recorded is not None:
        return list(ctx.recorded.commands)
    return ctx.derived("provenance.commands", lambda: list(dict.fromkeys(
        portable(c) for d in ctx.runs_dirs for c in commands(d, shown_runs(ctx)))))


def shown_environment(ctx) -> pd.DataFrame:
    """The environment table of the shown runs, or as the committed report kept it (a rebuild)."""
    return ctx.recorded.environment if ctx.recorded is not None else environment(shown_runs(ctx))
