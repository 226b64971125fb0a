"""The run-directory schema, atomic writes, and loading every run into one DataFrame.

A run directory holds:

    config.yaml        the resolved config of the run
    checkpoint.pt      model weights + config (tensors and plain values only; loaded weights_only)
    history.json       training curve: step, loss, lr, tokens/s, validation loss
    metrics.json       status, run facts and one record per (variant, protocol, length)
    per_position.npz   mean loss by position within the window, one array per evaluated length
    resume.pt          (while training) state to continue a killed run from, bit for bit

Every file is written to a temporary name in the same folder and renamed into place, so a reader
never sees half a file and a killed run leaves the previous version intact.
"""

from __future__ import annotations

import io
import json
import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

SCHEMA_VERSION = 1
METRICS = "metrics.json"
PER_POSITION = "per_position.npz"
CHECKPOINT = "checkpoint.pt"
HISTORY = "history.json"
CONFIG = "config.yaml"
RESUME = "resume.pt"  # training state of an unfinished run; removed when training completes
STATUSES = ("completed", "diverged", "failed")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_torch_save(path: Path, obj: Any) -> None:
    """torch.save, atomically: serialised in memory, then written and renamed into place."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue())


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def _json_safe(x: Any) -> Any:
    """NaN and inf are not JSON; they become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def write_json(path: Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(_json_safe(obj), indent=1, allow_nan=False) + "\n")


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


def read_metrics(run_dir: Path) -> dict | None:
    """The run's metrics, or None (with a warning naming the file) when missing or unreadable."""
    path = Path(run_dir) / METRICS
    if not path.exists():
        return None
    try:
        m = json.loads(path.read_text())
        if not isinstance(m, dict) or "status" not in m:
            raise ValueError("no 'status' field")
        return m
    except (ValueError, OSError) as e:
        warnings.warn(f"skipping unreadable {path}: {e}", stacklevel=2)
        return None


def is_complete(run_dir: Path) -> bool:
    m = read_metrics(run_dir) if (Path(run_dir) / METRICS).exists() else None
    return m is not None and m.get("status") == "completed"


def _visible(root: Path, path: Path) -> bool:
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def find_runs(root: Path) -> list[Path]:
    return sorted(p.parent for p in Path(root).rglob(METRICS) if _visible(root, p))


def find_incomplete(root: Path) -> list[Path]:
    """Run directories that started (config.yaml written) but never wrote metrics.json: still
    running, or killed; re-running the sweep resumes them."""
    return sorted(p.parent for p in Path(root).rglob(CONFIG) if _visible(root, p) and not (p.parent / METRICS).exists())


RUN_COLUMNS = ["run_id", "status", "encoding", "model", "train_len", "seed", "params", "train_tokens", "train_wall_s"]
# how and where a run was made, kept for the report so that it reads each metrics.json once
CONTEXT_COLUMNS = ["device", "torch_version", "python", "posbench_version", "corpus", "commands"]


def load_runs(root: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, evals): one row per run, and one row per run x variant x protocol x length."""
    runs, evals = [], []
    for run_dir in find_runs(root):
        m = read_metrics(run_dir)
        if m is None:
            continue
        row = {k: m.get(k) for k in RUN_COLUMNS + CONTEXT_COLUMNS}
        row["run_dir"] = str(run_dir)
        runs.append(row)
        for e in m.get("evaluations", []):
            evals.append({**{k: row[k] for k in ("run_id", "encoding", "model", "train_len", "seed", "status")}, **e})
    return pd.DataFrame(runs, columns=RUN_COLUMNS + CONTEXT_COLUMNS + ["run_dir"]), pd.DataFrame(evals)
