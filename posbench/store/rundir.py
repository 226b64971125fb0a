"""The run directory: its single owner, with every file's name and format, its writes and its reads
(run ids: posbench/store/identity.py; resume states: resume.py; the lock: lock.py).

A run directory ``<runs_dir>/<run_id>`` holds:

    config.yaml        the resolved config of the run
    checkpoint.pt      model weights + config (tensors and plain values only; loaded weights_only)
    history.json       training curve: step, loss, lr, tokens/s, validation loss
    metrics.json       status, run facts and one record per (variant, protocol, length); SCHEMA_VERSION
    per_position.npz   mean loss by position within the window, key ``<variant>/<protocol>/L<length>``
    token_losses.npz   (only for rows scored beside their window control ``+swaL``, and those controls)
                       each scored token's loss in nats (float16), key ``<variant>/<protocol>/L<length>``,
                       and per protocol and length each token's document (index among the token set's
                       documents, int32) ``<protocol>/L<length>/doc`` and position within its window
                       (int32) ``<protocol>/L<length>/position``; the same tokens, in the same order, in
                       every row: what the report's key tokens read (posbench/report/key_tokens/frames.py)
    resume.pt          (while training) state to continue a killed run from, bit for bit
    corpus.json        the fingerprint of the corpus the run trains on (written before training)
    .lock              held (flock) by the process working on the run

The WSD trunk of a ``train.budgets`` configuration (posbench/jobs/branches.py) lives beside its
branches, in ``<runs_dir>/trunks/<trunk_id>`` (no metrics.json or config.yaml: it is no run, and
neither the report nor posbench-eval sees it):

    trunk.yaml         the resolved config of the job that trained it last
    trunk.json         status (completed / diverged), snapshot steps, wall time
    snapshots/step<k>.pt  the full resume state after k steps: the start of a branch
    history.json, corpus.json, resume.pt (while training), .lock   as in a run directory

Every file is written to a temporary name in the same folder and renamed into place, so a reader
never sees half a file and a killed run leaves the previous version intact. Files and folders get
the permissions the user's umask gives (a shared cache or report stays readable to the group).
"""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from posbench import __version__
from posbench.core.errors import PosbenchError
from posbench.core.files import (
    atomic_torch_save,
    atomic_write_bytes,
    atomic_write_text,
    write_json,
)

log = logging.getLogger("posbench")

SCHEMA_VERSION = 1
METRICS = "metrics.json"
PER_POSITION = "per_position.npz"
TOKEN_LOSSES = "token_losses.npz"
CHECKPOINT = "checkpoint.pt"
HISTORY = "history.json"
CONFIG = "config.yaml"
RESUME = "resume.pt"  # training state of an unfinished run; removed when training completes
CORPUS = "corpus.json"  # the corpus a run trains on, recorded before its first step
LOCK = ".lock"
TRUNKS = "trunks"  # <runs_dir>/trunks/<trunk_id>: WSD trunks (posbench/jobs/branches.py)
TRUNK_CONFIG = "trunk.yaml"
TRUNK_STATUS = "trunk.json"
SNAPSHOTS = "snapshots"
STATUSES = ("completed", "diverged", "failed")


# -- atomic writes that respect the umask -------------------------------------------------------


def write_config(run_dir: Path, resolved: dict) -> None:
    atomic_write_text(Path(run_dir) / CONFIG, OmegaConf.to_yaml(resolved))


# -- metrics.json -------------------------------------------------------------------------------


def new_metrics(run_id: str, **facts) -> dict:
    """A run's metrics before training: status ``failed`` until something better is known."""
    return {"schema_version": SCHEMA_VERSION, "run_id": run_id, "status": "failed", **facts, "evaluations": []}


def write_metrics(run_dir: Path, metrics: dict) -> None:
    write_json(Path(run_dir) / METRICS, {**metrics, "schema_version": SCHEMA_VERSION})


def check_metrics(m: Any, path: Path | str = METRICS) -> dict:
    """The shape every reader relies on; raises ValueError naming what is wrong, and PosbenchError
    for a file of a newer schema (refused by every command, never read in part and rewritten)."""
    if not isinstance(m, dict):
        raise ValueError(f"expected a JSON object, got {type(m).__name__}")
    version = m.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version > SCHEMA_VERSION:
            raise PosbenchError(f"{path} has schema_version {version!r}, newer than posbench {__version__} reads "
                            f"(schema_version {SCHEMA_VERSION}); upgrade posbench to work on this run")
    if m.get("status") not in STATUSES:
        raise ValueError(f"status {m.get('status')!r} is not one of {', '.join(STATUSES)}")
    for key in ("run_id", "encoding"):
        if not isinstance(m.get(key), str):
            raise ValueError(f"no {key!r} string")
    for key in ("train_len", "seed"):
        if not isinstance(m.get(key), int):
            raise ValueError(f"no integer {key!r}")
    evals = m.get("evaluations", [])
    if not isinstance(evals, list) or not all(isinstance(e, dict) for e in evals):
        raise ValueError("'evaluations' is not a list of records")
    for e in evals:
        missing = [k for k in ("variant", "protocol", "length", "multiple", "ppl") if k not in e]
        if missing:
            raise ValueError(f"an evaluation record has no {missing[0]!r}")
    return m


def load_metrics(run_dir: Path) -> dict | None:
    """The run's metrics, or None when there are none; ValueError saying why when unreadable."""
    path = Path(run_dir) / METRICS
    if not path.exists():
        return None
    try:
        return check_metrics(json.loads(path.read_text()), path)
    except OSError as e:
        raise ValueError(e.strerror or str(e)) from None


def read_metrics(run_dir: Path, warn: bool = True) -> dict | None:
    """The run's metrics, or None when missing, or unreadable (with a warning naming the file)."""
    try:
        return load_metrics(run_dir)
    except ValueError as e:
        if warn:
            log.warning("skipping unreadable %s: %s", Path(run_dir) / METRICS, e)
        return None


def write_corpus(run_dir: Path, fingerprint: dict) -> None:
    write_json(Path(run_dir) / CORPUS, fingerprint)


def recorded_corpus(run_dir: Path) -> dict | None:
    """The fingerprint of the corpus a run was trained on: its metrics' ``corpus``, else (a run
    killed before its metrics were written) ``corpus.json``; None when neither says."""
    run_dir = Path(run_dir)
    m = read_metrics(run_dir, warn=False)
    if m is not None and isinstance(m.get("corpus"), dict) and m["corpus"].get("hash"):
        return m["corpus"]
    try:
        c = json.loads((run_dir / CORPUS).read_text())
    except (OSError, ValueError):
        return None
    return c if isinstance(c, dict) and c.get("hash") else None


def is_complete(run_dir: Path) -> bool:
    m = read_metrics(run_dir, warn=False)
    return m is not None and m.get("status") == "completed"


# -- history.json and per_position.npz ----------------------------------------------------------


def write_history(run_dir: Path, history: list[dict]) -> None:
    write_json(Path(run_dir) / HISTORY, history)


def read_history(run_dir: Path) -> pd.DataFrame | None:
    """The training curve; None when there is none; ValueError when it is malformed."""
    path = Path(run_dir) / HISTORY
    if not path.exists():
        return None
    try:
        rows = json.loads(path.read_text())
    except (ValueError, OSError) as e:
        raise ValueError(f"{HISTORY}: {e}") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "step" in r for r in rows):
        raise ValueError(f"{HISTORY}: expected a list of records with a 'step'")
    return pd.DataFrame(rows)


def per_position_key(variant: str, protocol: str, length: int) -> str:
    return f"{variant}/{protocol}/L{length}"


def write_per_position(run_dir: Path, per_pos: dict[str, np.ndarray]) -> None:
    """Merge into per_position.npz (an unreadable old file is replaced, with a warning)."""
    _merge_npz(Path(run_dir) / PER_POSITION, per_pos)


def read_per_position(run_dir: Path) -> dict[str, np.ndarray] | None:
    """Every per-position curve; None when there is none; ValueError when the file is corrupt."""
    return _read_npz(Path(run_dir) / PER_POSITION)


def token_loss_keys(variant: str, protocol: str, length: int) -> tuple[str, str, str]:
    """The keys in token_losses.npz of a row's per-token losses, and of the tokens' documents and
    window positions (shared by every row of the protocol and length)."""
    return per_position_key(variant, protocol, length), f"{protocol}/L{length}/doc", f"{protocol}/L{length}/position"


def write_token_losses(run_dir: Path, arrays: dict[str, np.ndarray]) -> None:
    """Merge into token_losses.npz (an unreadable old file is replaced, with a warning)."""
    _merge_npz(Path(run_dir) / TOKEN_LOSSES, arrays)


def read_token_losses(run_dir: Path) -> dict[str, np.ndarray] | None:
    """Every per-token array of the run; None when there is none; ValueError when the file is corrupt."""
    return _read_npz(Path(run_dir) / TOKEN_LOSSES)


def _merge_npz(path: Path, new: dict[str, np.ndarray]) -> None:
    try:
        arrays = _read_npz(path) or {}
    except ValueError as e:
        log.warning("replacing unreadable %s", e)
        arrays = {}
    buf = io.BytesIO()
    np.savez_compressed(buf, **{**arrays, **new})
    atomic_write_bytes(path, buf.getvalue())


def _read_npz(path: Path) -> dict[str, np.ndarray] | None:
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as e:  # noqa: BLE001 - zip, pickle or format errors all mean "corrupt"
        raise ValueError(f"{path}: {type(e).__name__}") from None


# -- checkpoint and resume state ----------------------------------------------------------------


def save_checkpoint(run_dir: Path, model_state: dict, config: dict) -> None:
    atomic_torch_save(Path(run_dir) / CHECKPOINT, {"model": model_state, "config": config})


def load_checkpoint(run_dir: Path) -> dict:
    """{'model': state_dict, 'config': resolved config}; a one-line PosbenchError otherwise."""
    import torch

    path = Path(run_dir) / CHECKPOINT
    if not path.exists():
        raise PosbenchError(f"no checkpoint at {path}; train the run first (posbench-train)")
    try:
        # weights_only: tensors and plain values only, never arbitrary pickled objects
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise PosbenchError(f"checkpoint {path} is truncated or not a posbench checkpoint ({type(e).__name__})") from e
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("model"), dict) or not isinstance(ckpt.get("config"), dict):
        raise PosbenchError(f"checkpoint {path} is not a posbench checkpoint (expected keys 'model' and 'config')")
    return ckpt


# -- finding and loading runs -------------------------------------------------------------------


def _visible(root: Path, path: Path) -> bool:
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def find_runs(root: Path) -> list[Path]:
    return sorted(p.parent for p in Path(root).rglob(METRICS) if _visible(root, p))


def find_incomplete(root: Path) -> list[Path]:
    """Run directories that started (config.yaml written) but never wrote metrics.json: still
    running, or killed; re-running the sweep resumes them."""
    return sorted(p.parent for p in Path(root).rglob(CONFIG) if _visible(root, p) and not (p.parent / METRICS).exists())


def read_run_config(run_dir: Path) -> dict:
    """The run's resolved config as plain values (for posbench.spec.RunSpec.from_config)."""
    return OmegaConf.to_container(read_config(run_dir), resolve=True)


def is_checkpoint_run(run_dir: Path) -> bool:
    """A run ``posbench-eval-hf`` made from a Hugging Face checkpoint (its config.yaml has a ``checkpoint``
    block): it has no posbench checkpoint.pt, and posbench-eval-hf, not posbench-eval, scores it again."""
    try:
        return read_config(run_dir).get("checkpoint") is not None
    except ValueError:
        return False


def read_config(run_dir: Path) -> DictConfig:
    """The run's resolved config; ValueError when missing or not a mapping."""
    path = Path(run_dir) / CONFIG
    try:
        cfg = OmegaConf.load(path)
    except Exception as e:  # noqa: BLE001 - missing file, YAML error
        raise ValueError(f"{path.name}: {type(e).__name__}") from e
    if not isinstance(cfg, DictConfig):
        raise ValueError(f"{path.name} is not a mapping")
    return cfg


# what names a run in every per-record table of the report (evaluations, tasks, attention, convergence)
RUN_KEY = ["run_id", "encoding", "model", "train_len", "seed"]
RUN_COLUMNS = ["run_id", "status", "encoding", "model", "train_len", "seed", "params", "train_steps", "train_tokens",
               "train_wall_s", "final_val_loss"]
# how and where a run was made, kept for the report so that it reads each metrics.json once
CONTEXT_COLUMNS = ["device", "torch_version", "python", "posbench_version", "corpus", "commands", "during_training",
                   "task", "task_evaluations", "attention", "trunk"]
