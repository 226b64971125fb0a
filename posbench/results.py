"""The run directory: its single owner. Names, run ids, every file's format, writes, reads, the lock.

A run directory ``<runs_dir>/<run_id>`` holds:

    config.yaml        the resolved config of the run
    checkpoint.pt      model weights + config (tensors and plain values only; loaded weights_only)
    history.json       training curve: step, loss, lr, tokens/s, validation loss
    metrics.json       status, run facts and one record per (variant, protocol, length); SCHEMA_VERSION
    per_position.npz   mean loss by position within the window, key ``<variant>/<protocol>/L<length>``
    resume.pt          (while training) state to continue a killed run from, bit for bit
    corpus.json        the fingerprint of the corpus the run trains on (written before training)
    .lock              held (flock) by the process working on the run

The WSD trunk of a ``train.budgets`` configuration (posbench/branches.py) lives beside its
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

import contextlib
import fcntl
import hashlib
import io
import json
import logging
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from posbench.errors import PosbenchError

log = logging.getLogger("posbench")

SCHEMA_VERSION = 1
METRICS = "metrics.json"
PER_POSITION = "per_position.npz"
CHECKPOINT = "checkpoint.pt"
HISTORY = "history.json"
CONFIG = "config.yaml"
RESUME = "resume.pt"  # training state of an unfinished run; removed when training completes
CORPUS = "corpus.json"  # the corpus a run trains on, recorded before its first step
LOCK = ".lock"
TRUNKS = "trunks"  # <runs_dir>/trunks/<trunk_id>: WSD trunks (posbench/branches.py)
TRUNK_CONFIG = "trunk.yaml"
TRUNK_STATUS = "trunk.json"
SNAPSHOTS = "snapshots"
STATUSES = ("completed", "diverged", "failed")


# -- run ids ------------------------------------------------------------------------------------

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
        "encoding": c["encoding"],
        "model": c["model"],
        "data": data,
        "train": schedule_identity({k: v for k, v in c["train"].items() if k not in NON_IDENTITY_TRAIN_KEYS}),
        "train_len": c["train_len"],
        "seed": c["seed"],
    }
    if (c.get("extend") or {}).get("length") is not None:  # ordinary runs keep the ids they always had
        identity["extend"] = c["extend"]
    task = c.get("task") or {"name": "lm"}
    if task["name"] != "lm":  # language models keep their ids; the evaluation grid (eval_*) trains nothing
        identity["task"] = task_settings({k: v for k, v in task.items() if not k.startswith("eval_")})
    return identity


# the schedule keys that came with warmup-stable-decay; a cosine run's weights do not depend on them
WSD_KEYS = ("schedule", "cooldown", "cooldown_shape", "budgets")


def schedule_identity(train: dict) -> dict:
    """The ``train`` section as run ids name it. A cosine run (every run made before ``schedule``
    existed) leaves out the WSD keys, so that it keeps its id; a WSD run leaves out
    ``min_lr_ratio`` (it cools down to 0) and ``budgets``: a branch is the run of its budget's
    steps, with that run's id (posbench/branches.py)."""
    if train.get("schedule", "cosine") == "cosine":
        return {k: v for k, v in train.items() if k not in WSD_KEYS}
    return {k: v for k, v in train.items() if k not in ("min_lr_ratio", "budgets")}


def task_settings(settings: dict) -> dict:
    """A task's settings as run ids and evaluation example sets name them: ``loss: answer`` (how
    every task run trained before ``task.loss`` existed) is left out, so that those runs keep their
    ids and their records their example set."""
    return {k: v for k, v in settings.items() if (k, v) != ("loss", "answer")}


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
    return f"{safe_name(cfg['encoding']['name'])}_{cfg['model']['name']}_L{cfg['train_len']}_s{cfg['seed']}_{ext}{digest}"


def trunk_id(cfg: Mapping[str, Any], recording: Mapping[str, Any]) -> str:
    """The id of the WSD trunk that the branches of a ``train.budgets`` config start from: the run
    identity without what only the branches' cool-downs depend on (steps, cooldown and its shape),
    so that every budget of a configuration, asked for now or later, shares one trunk; plus what
    the trunk records for its branches (``recording``, posbench.branches.recording)."""
    identity = run_identity(cfg)
    identity["train"] = {k: v for k, v in identity["train"].items() if k not in ("steps", "cooldown", "cooldown_shape")}
    digest = hashlib.sha1(json.dumps({"trunk": identity, "recording": recording}, sort_keys=True).encode()).hexdigest()[:10]
    task = (cfg.get("task") or {}).get("name", "lm")
    return (f"{safe_name(cfg['encoding']['name'])}_{cfg['model']['name']}_L{cfg['train_len']}_s{cfg['seed']}_"
            f"{'' if task == 'lm' else task + '_'}trunk_{digest}")


def tokenizer_label(cfg: Mapping[str, Any]) -> str:
    """``byte``, or the subword tokenizer of a resolved config as run ids name it (``bpe1024``)."""
    from posbench.tokenizer import TokenizerConfig

    t = (cfg.get("data") or {}).get("tokenizer") or {}
    return safe_name(TokenizerConfig(**{k: v for k, v in t.items() if k in ("kind", "vocab_size", "path", "name")}).label)


def safe_name(name: str) -> str:
    """A plug-in named by its path (``mypkg.enc:MyEnc``) in a folder name: ':' and '/' become '-'."""
    return name.replace(":", "-").replace("/", "-")


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


# -- atomic writes that respect the umask -------------------------------------------------------


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _umask()


def make_dirs(path: Path) -> None:
    """mkdir -p with the umask's permissions (what mkdir does; named so every folder goes one way)."""
    Path(path).mkdir(parents=True, exist_ok=True)


def private_tempdir(parent: Path, prefix: str) -> Path:
    """A temporary folder in ``parent`` with the umask's permissions (mkdtemp makes it 0700)."""
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=prefix))
    os.chmod(tmp, 0o777 & ~UMASK)
    return tmp


def publish_dir(tmp: Path, final: Path) -> None:
    """Rename a folder built in ``tmp`` into place as ``final`` (a cache keyed by what it holds). Where
    another process published the same folder first, theirs is identical: keep it (the caller removes
    ``tmp``)."""
    try:
        os.rename(tmp, final)
    except OSError:
        pass


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    make_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~UMASK)  # mkstemp makes it 0600
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def atomic_torch_save(path: Path, obj: Any) -> None:
    """torch.save, atomically: serialised in memory, then written and renamed into place."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    atomic_write_bytes(path, buf.getvalue())


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
        from posbench import __version__

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
    try:
        arrays = read_per_position(run_dir) or {}
    except ValueError as e:
        log.warning("replacing unreadable %s", e)
        arrays = {}
    buf = io.BytesIO()
    np.savez_compressed(buf, **{**arrays, **per_pos})
    atomic_write_bytes(Path(run_dir) / PER_POSITION, buf.getvalue())


def read_per_position(run_dir: Path) -> dict[str, np.ndarray] | None:
    """Every per-position curve; None when there is none; ValueError when the file is corrupt."""
    path = Path(run_dir) / PER_POSITION
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


RESUME_KEYS = ("model", "optimizer", "scheduler", "torch_rng", "next_step", "history", "last_loss", "val_loss", "train_wall_s")


def save_resume(run_dir: Path, state: dict) -> None:
    atomic_torch_save(Path(run_dir) / RESUME, state)


def load_resume(run_dir: Path, steps: int | None = None) -> dict | None:
    """The saved training state, or None when there is none or it is unusable (unreadable, not
    what save_resume writes, or not a state of a run of ``steps`` steps): then a warning, the file
    is discarded and the run starts over."""
    import torch

    path = Path(run_dir) / RESUME
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        check_resume(state, steps)
    except Exception as e:  # noqa: BLE001 - a torn disk or another tool's file: start over, say so
        discard_resume(run_dir, f"{type(e).__name__}: {e}")
        return None
    return state


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _records(x: Any, what: str, next_step: int) -> None:
    """A list of records with integer steps, in order, none past the step the state resumes at."""
    if not isinstance(x, list) or not all(isinstance(r, dict) for r in x):
        raise ValueError(f"{what} is not a list of records ({type(x).__name__})")
    steps = [r.get("step") for r in x]
    if not all(isinstance(s, int) and not isinstance(s, bool) and 1 <= s <= next_step for s in steps):
        raise ValueError(f"{what} has a record without a step in 1..{next_step}")
    if steps != sorted(steps):
        raise ValueError(f"{what} is not in step order")


def check_resume(state: Any, steps: int | None = None) -> dict:
    """The shape and values train_model relies on (ValueError naming the first problem): every key
    of the right type, ``next_step`` inside this run's budget (a state written after step k has
    next_step k, 1 <= k < steps) and equal to the schedule's step count, the history and probes
    lists of records up to it."""
    import torch

    if not isinstance(state, dict):
        raise ValueError(f"not a dict ({type(state).__name__})")
    if missing := [k for k in RESUME_KEYS if k not in state]:
        raise ValueError(f"no {missing[0]!r}")
    for key in ("model", "optimizer", "scheduler"):
        if not isinstance(state[key], dict):
            raise ValueError(f"{key} is not a state dict ({type(state[key]).__name__})")
    if not isinstance(state["torch_rng"], torch.Tensor) or state["torch_rng"].dtype != torch.uint8:
        raise ValueError("torch_rng is not a torch RNG state")
    n = state["next_step"]
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"next_step {n!r} is not a step count")
    if steps is not None and n >= steps:
        raise ValueError(f"next_step {n} is not inside this run's train.steps={steps}")
    if state["scheduler"].get("last_epoch", n) != n:
        raise ValueError(f"next_step {n} does not match the schedule's step {state['scheduler'].get('last_epoch')!r}")
    _records(state["history"], "history", n)
    _records(state.get("probes", []), "probes", n)
    if not _number(state["last_loss"]):
        raise ValueError(f"last_loss {state['last_loss']!r} is not a number")
    if state["val_loss"] is not None and not _number(state["val_loss"]):
        raise ValueError(f"val_loss {state['val_loss']!r} is not a number")
    if not _number(state["train_wall_s"]) or not 0 <= state["train_wall_s"] < float("inf"):
        raise ValueError(f"train_wall_s {state['train_wall_s']!r} is not a duration")
    return state


def snapshot_path(trunk_dir: Path, step: int) -> Path:
    """Where a trunk keeps its full training state after ``step`` steps (save_resume's format)."""
    return Path(trunk_dir) / SNAPSHOTS / f"step{step}.pt"


def snapshot_steps(trunk_dir: Path) -> list[int]:
    """The steps of a trunk's stored snapshots, in order."""
    folder = Path(trunk_dir) / SNAPSHOTS
    steps = [p.name[4:-3] for p in folder.glob("step*.pt")] if folder.is_dir() else []
    return sorted(int(s) for s in steps if s.isdigit())


def load_snapshot(trunk_dir: Path, step: int) -> dict | None:
    """A trunk's snapshot after ``step`` steps, checked like a resume state; None (with a warning,
    the file removed) when missing or unusable, so that the trunk makes it again."""
    import torch

    path = snapshot_path(trunk_dir, step)
    if not path.exists():
        return None
    try:
        state = check_resume(torch.load(path, map_location="cpu", weights_only=True))
        if state["next_step"] != step:
            raise ValueError(f"next_step {state['next_step']} in a snapshot of step {step}")
    except Exception as e:  # noqa: BLE001 - torn or foreign: the trunk trains it again
        log.warning("discarding unusable trunk snapshot %s (%s: %s)", path, type(e).__name__, e)
        path.unlink(missing_ok=True)
        return None
    return state


def discard_resume(run_dir: Path, why: str) -> None:
    path = Path(run_dir) / RESUME
    log.warning("discarding unusable resume state %s (%s); training from step 0", path, why)
    path.unlink(missing_ok=True)


def clear_resume(run_dir: Path) -> None:
    (Path(run_dir) / RESUME).unlink(missing_ok=True)


# -- one process per run ------------------------------------------------------------------------


@contextlib.contextmanager
def run_lock(run_dir: Path, wait: bool = False) -> Iterator[bool]:
    """Hold the run's lock while working on it; yields False (holding nothing) when another process
    has it, so that two terminals or a requeued cluster job never train the same run twice. With
    ``wait``, wait for the other process instead (saying so), and yield True once the lock is ours:
    posbench-eval does, so that two evaluations of one run add their records one after the other."""
    make_dirs(run_dir)
    fd = os.open(Path(run_dir) / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                yield False
                return
            log.info("waiting for the process (pid %s) working on %s to finish", lock_holder(run_dir), run_dir)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def lock_holder(run_dir: Path) -> str:
    try:
        return (Path(run_dir) / LOCK).read_text().strip() or "?"
    except OSError:
        return "?"


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


RUN_COLUMNS = ["run_id", "status", "encoding", "model", "train_len", "seed", "params", "train_steps", "train_tokens",
               "train_wall_s", "final_val_loss"]
# how and where a run was made, kept for the report so that it reads each metrics.json once
CONTEXT_COLUMNS = ["device", "torch_version", "python", "posbench_version", "corpus", "commands", "during_training",
                   "task", "task_evaluations", "attention"]
