"""What a reader needs besides the numbers: how the runs were made (commands), on what
(environment, corpus) and with which settings (each run's resolved config)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml
from omegaconf import OmegaConf

from posbench.results import CONFIG, read_metrics

# keys that differ between runs for reasons that say nothing about the experiment
NOISE_KEYS = ("runs_dir",)


def flat_config(run_dir: str) -> dict:
    cfg = OmegaConf.to_container(OmegaConf.load(Path(run_dir) / CONFIG))
    return {k: v for k, v in pd.json_normalize(cfg, sep=".").iloc[0].items() if k not in NOISE_KEYS}


def config_split(runs: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """(settings shared by every run, one row per run with the settings that differ). Together
    they give each run's full resolved config."""
    flats = {rid: flat_config(d) for rid, d in zip(runs["run_id"], runs["run_dir"]) if (Path(d) / CONFIG).exists()}
    if not flats:
        return {}, pd.DataFrame()
    frame = pd.DataFrame.from_dict(flats, orient="index").map(_hashable)
    shared_cols = [c for c in frame.columns if frame[c].nunique(dropna=False) == 1]
    shared = {c: frame[c].iloc[0] for c in shared_cols}
    differing = frame.drop(columns=shared_cols).rename_axis("run_id").reset_index()
    return shared, differing


def _hashable(v):
    return str(v) if isinstance(v, (list, dict)) else v


def nested_yaml(flat: dict) -> str:
    """A flat {a.b: v} dict back to nested YAML, for reading."""
    tree: dict = {}
    for key, value in sorted(flat.items()):
        node = tree
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = yaml.safe_load(value) if isinstance(value, str) and value[:1] in "[{" else _plain(value)
    return yaml.safe_dump(tree, sort_keys=True, default_flow_style=None)


def _plain(v):
    if hasattr(v, "item"):  # numpy scalar
        v = v.item()
    if isinstance(v, float) and v != v:
        return None
    return v


def run_config_yaml(run_dir: str) -> str:
    return (Path(run_dir) / CONFIG).read_text()


def environment(runs: pd.DataFrame) -> pd.DataFrame:
    """Distinct (device, torch, python, posbench, corpus) combinations and how many runs used each."""
    rows = []
    for run_dir in runs["run_dir"]:
        m = read_metrics(Path(run_dir)) or {}
        corpus = m.get("corpus") or {}
        rows.append({
            "device": m.get("device"), "torch": m.get("torch_version"), "python": m.get("python"),
            "posbench": m.get("posbench_version"),
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
        task = (OmegaConf.load(f).hydra.overrides.task) or []
        found.append("posbench-train -m " + " ".join(task))
    for run_dir in runs["run_dir"]:
        m = read_metrics(Path(run_dir)) or {}
        for cmd in m.get("commands", []):
            found.append(cmd)
    return list(dict.fromkeys(found))  # unique, in order
