"""The run directory: its single owner, with every file's name and format, its writes and its reads,
as the methods of one object, ``RunDir(path)`` (a trunk's folder: ``TrunkDir``, below). Run ids are
posbench/store/identity.py's; the resume state's format and checks resume.py's; the flock lock.py's.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ContextManager

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
from posbench.store.lock import hold, holder, is_free
from posbench.store.resume import read_state

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


# -- what is not one run's: a record's shape and keys, finding runs ---------------------------------


def new_metrics(run_id: str, **facts) -> dict:
    """A run's metrics before training: status ``failed`` until something better is known."""
    return {"schema_version": SCHEMA_VERSION, "run_id": run_id, "status": "failed", **facts, "evaluations": []}


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


def per_position_key(variant: str, protocol: str, length: int) -> str:
    return f"{variant}/{protocol}/L{length}"


def token_loss_keys(variant: str, protocol: str, length: int) -> tuple[str, str, str]:
    """The keys in token_losses.npz of a row's per-token losses, and of the tokens' documents and
    window positions (shared by every row of the protocol and length)."""
    return per_position_key(variant, protocol, length), f"{protocol}/L{length}/doc", f"{protocol}/L{length}/position"


def _visible(root: Path, path: Path) -> bool:
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def find_runs(root: Path) -> list[Path]:
    return sorted(p.parent for p in Path(root).rglob(METRICS) if _visible(root, p))


def find_incomplete(root: Path) -> list[Path]:
    """Run directories that started (config.yaml written) but never wrote metrics.json: still
    running, or killed; re-running the sweep resumes them."""
    return sorted(p.parent for p in Path(root).rglob(CONFIG) if _visible(root, p) and not (p.parent / METRICS).exists())


# -- one run's folder -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunDir:
    """One run's folder (``path``, which need not exist yet) and every read and write of its files.
    Reads say "nothing there" with None and "unreadable" with ValueError (the checkpoint: a one-line
    PosbenchError), as each method says."""

    path: Path

    def __post_init__(self):
        object.__setattr__(self, "path", Path(self.path))

    @property
    def name(self) -> str:
        return self.path.name

    def __str__(self) -> str:
        return str(self.path)

    # -- config.yaml ------------------------------------------------------------------------------

    def has_config(self) -> bool:
        return (self.path / CONFIG).is_file()

    def write_config(self, resolved: dict) -> None:
        atomic_write_text(self.path / CONFIG, OmegaConf.to_yaml(resolved))

    def read_config(self) -> DictConfig:
        """The run's resolved config; ValueError when missing or not a mapping."""
        path = self.path / CONFIG
        try:
            cfg = OmegaConf.load(path)
        except Exception as e:  # noqa: BLE001 - missing file, YAML error
            raise ValueError(f"{path.name}: {type(e).__name__}") from e
        if not isinstance(cfg, DictConfig):
            raise ValueError(f"{path.name} is not a mapping")
        return cfg

    def read_run_config(self) -> dict:
        """The run's resolved config as plain values (for posbench.spec.RunSpec.from_config)."""
        return OmegaConf.to_container(self.read_config(), resolve=True)

    def is_checkpoint_run(self) -> bool:
        """A run ``posbench-eval-hf`` made from a Hugging Face checkpoint (its config.yaml has a ``checkpoint``
        block): it has no posbench checkpoint.pt, and posbench-eval-hf, not posbench-eval, scores it again."""
        try:
            return self.read_config().get("checkpoint") is not None
        except ValueError:
            return False

    # -- metrics.json -----------------------------------------------------------------------------

    def has_metrics(self) -> bool:
        return (self.path / METRICS).exists()

    def write_metrics(self, metrics: dict) -> None:
        write_json(self.path / METRICS, {**metrics, "schema_version": SCHEMA_VERSION})

    def load_metrics(self) -> dict | None:
        """The run's metrics, or None when there are none; ValueError saying why when unreadable."""
        path = self.path / METRICS
        if not path.exists():
            return None
        try:
            return check_metrics(json.loads(path.read_text()), path)
        except OSError as e:
            raise ValueError(e.strerror or str(e)) from None

    def read_metrics(self, warn: bool = True) -> dict | None:
        """The run's metrics, or None when missing, or unreadable (with a warning naming the file)."""
        try:
            return self.load_metrics()
        except ValueError as e:
            if warn:
                log.warning("skipping unreadable %s: %s", self.path / METRICS, e)
            return None

    def recorded_run_id(self) -> str:
        """The run id metrics.json records, read without the other checks (a file that names its run
        and little else, as an export's source may hold); the folder's name where it names none."""
        try:
            return str(json.loads((self.path / METRICS).read_text())["run_id"])
        except (OSError, ValueError, KeyError, TypeError):
            return self.name

    def is_complete(self) -> bool:
        m = self.read_metrics(warn=False)
        return m is not None and m.get("status") == "completed"

    # -- corpus.json ------------------------------------------------------------------------------

    def write_corpus(self, fingerprint: dict) -> None:
        write_json(self.path / CORPUS, fingerprint)

    def recorded_corpus(self) -> dict | None:
        """The fingerprint of the corpus the run was trained on: its metrics' ``corpus``, else (a run
        killed before its metrics were written) ``corpus.json``; None when neither says."""
        m = self.read_metrics(warn=False)
        if m is not None and isinstance(m.get("corpus"), dict) and m["corpus"].get("hash"):
            return m["corpus"]
        try:
            c = json.loads((self.path / CORPUS).read_text())
        except (OSError, ValueError):
            return None
        return c if isinstance(c, dict) and c.get("hash") else None

    # -- history.json -----------------------------------------------------------------------------

    def write_history(self, history: list[dict]) -> None:
        write_json(self.path / HISTORY, history)

    def read_history(self) -> pd.DataFrame | None:
        """The training curve; None when there is none; ValueError when it is malformed."""
        path = self.path / HISTORY
        if not path.exists():
            return None
        try:
            rows = json.loads(path.read_text())
        except (ValueError, OSError) as e:
            raise ValueError(f"{HISTORY}: {e}") from None
        if not isinstance(rows, list) or not all(isinstance(r, dict) and "step" in r for r in rows):
            raise ValueError(f"{HISTORY}: expected a list of records with a 'step'")
        return pd.DataFrame(rows)

    # -- per_position.npz and token_losses.npz ------------------------------------------------------

    def write_per_position(self, per_pos: dict[str, np.ndarray]) -> None:
        """Merge into per_position.npz (an unreadable old file is replaced, with a warning)."""
        _merge_npz(self.path / PER_POSITION, per_pos)

    def read_per_position(self) -> dict[str, np.ndarray] | None:
        """Every per-position curve; None when there is none; ValueError when the file is corrupt."""
        return _read_npz(self.path / PER_POSITION)

    def write_token_losses(self, arrays: dict[str, np.ndarray]) -> None:
        """Merge into token_losses.npz (an unreadable old file is replaced, with a warning)."""
        _merge_npz(self.path / TOKEN_LOSSES, arrays)

    def read_token_losses(self) -> dict[str, np.ndarray] | None:
        """Every per-token array of the run; None when there is none; ValueError when the file is corrupt."""
        return _read_npz(self.path / TOKEN_LOSSES)

    # -- checkpoint.pt ----------------------------------------------------------------------------

    def save_checkpoint(self, model_state: dict, config: dict) -> None:
        atomic_torch_save(self.path / CHECKPOINT, {"model": model_state, "config": config})

    def load_checkpoint(self) -> dict:
        """{'model': state_dict, 'config': resolved config}; a one-line PosbenchError otherwise."""
        import torch

        path = self.path / CHECKPOINT
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

    # -- resume.pt (posbench/store/resume.py: its format) -----------------------------------------

    def has_resume(self) -> bool:
        return (self.path / RESUME).exists()

    def save_resume(self, state: dict) -> None:
        atomic_torch_save(self.path / RESUME, state)

    def load_resume(self, steps: int | None = None) -> dict | None:
        """The saved training state, or None when there is none or it is unusable (unreadable, not
        what save_resume writes, or not a state of a run of ``steps`` steps): then a warning, the file
        is discarded and the run starts over."""
        path = self.path / RESUME
        if not path.exists():
            return None
        try:
            return read_state(path, steps)
        except Exception as e:  # noqa: BLE001 - a torn disk or another tool's file: start over, say so
            self.discard_resume(f"{type(e).__name__}: {e}")
            return None

    def discard_resume(self, why: str) -> None:
        path = self.path / RESUME
        log.warning("discarding unusable resume state %s (%s); training from step 0", path, why)
        path.unlink(missing_ok=True)

    def clear_resume(self) -> None:
        (self.path / RESUME).unlink(missing_ok=True)

    # -- .lock (posbench/store/lock.py: the flock) ------------------------------------------------

    def lock(self, wait: bool = False) -> ContextManager[bool]:
        """Hold the run's lock while working on it: yields False when another process has it (or,
        with ``wait``, waits for it, saying so); posbench/store/lock.py's ``hold``."""
        return hold(self.path / LOCK, wait)

    def lock_holder(self) -> str:
        """The pid of the process that holds (or last held) the run's lock; "?" when unknown."""
        return holder(self.path / LOCK)

    def lock_is_free(self) -> bool:
        """Whether no process holds the run's lock now (no lock file is created to find out)."""
        return is_free(self.path / LOCK)


class TrunkDir(RunDir):
    """A WSD trunk's folder, ``<runs_dir>/trunks/<trunk_id>`` (posbench/jobs/branches.py): a run folder's
    history, corpus, resume state and lock, and its own trunk.yaml, trunk.json and snapshots."""

    def write_trunk_config(self, resolved: dict) -> None:
        atomic_write_text(self.path / TRUNK_CONFIG, OmegaConf.to_yaml(resolved))

    def read_status(self) -> dict:
        """trunk.json ({} when missing or unreadable)."""
        try:
            out = json.loads((self.path / TRUNK_STATUS).read_text())
        except (OSError, ValueError):
            return {}
        return out if isinstance(out, dict) else {}

    def write_status(self, status: dict) -> None:
        write_json(self.path / TRUNK_STATUS, status)

    def snapshot_path(self, step: int) -> Path:
        """Where the trunk keeps its full training state after ``step`` steps (save_resume's format)."""
        return self.path / SNAPSHOTS / f"step{step}.pt"

    def snapshot_steps(self) -> list[int]:
        """The steps of the trunk's stored snapshots, in order."""
        folder = self.path / SNAPSHOTS
        steps = [p.name[4:-3] for p in folder.glob("step*.pt")] if folder.is_dir() else []
        return sorted(int(s) for s in steps if s.isdigit())

    def load_snapshot(self, step: int) -> dict | None:
        """The trunk's snapshot after ``step`` steps, checked like a resume state; None (with a warning,
        the file removed) when missing or unusable, so that the trunk makes it again."""
        path = self.snapshot_path(step)
        if not path.exists():
            return None
        try:
            state = read_state(path)
            if state["next_step"] != step:
                raise ValueError(f"next_step {state['next_step']} in a snapshot of step {step}")
        except Exception as e:  # noqa: BLE001 - torn or foreign: the trunk trains it again
            log.warning("discarding unusable trunk snapshot %s (%s: %s)", path, type(e).__name__, e)
            path.unlink(missing_ok=True)
            return None
        return state

    def resume_from_snapshot(self, step: int) -> None:
        """Make the snapshot after ``step`` steps the trunk's resume state (a copy, byte for byte)."""
        atomic_write_bytes(self.path / RESUME, self.snapshot_path(step).read_bytes())


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


# what names a run in every per-record table of the report (evaluations, tasks, attention, convergence)
RUN_KEY = ["run_id", "encoding", "model", "train_len", "seed"]
RUN_COLUMNS = ["run_id", "status", "encoding", "model", "train_len", "seed", "params", "train_steps", "train_tokens",
               "train_wall_s", "final_val_loss"]
# how and where a run was made, kept for the report so that it reads each metrics.json once
CONTEXT_COLUMNS = ["device", "torch_version", "python", "posbench_version", "corpus", "commands", "during_training",
                   "task", "task_evaluations", "attention", "trunk"]
