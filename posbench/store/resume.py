"""Resume states: the training state of an unfinished run (``resume.pt``: model, optimizer, scheduler,
RNG, history) and a WSD trunk's snapshots at the start of each cool-down, in one format, checked
before either is used. Where they are kept, and what happens to an unusable one, is
posbench/store/rundir.py's (``RunDir.load_resume``, ``TrunkDir.load_snapshot``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


RESUME_KEYS = ("model", "optimizer", "scheduler", "torch_rng", "next_step", "history", "last_loss", "val_loss", "train_wall_s")


OPTIONAL_RESUME_KEYS = ("probes",)  # absent from resume states written before the during-training probes


def resume_state(**fields) -> dict:
    """A resume state in the one format ``check_resume`` reads back: every key of RESUME_KEYS (and
    the optional ones), nothing else. A missing or unknown key is a bug in the caller, not user input."""
    if missing := set(RESUME_KEYS) - set(fields):
        raise TypeError(f"resume state without {sorted(missing)}")
    if unknown := set(fields) - set(RESUME_KEYS) - set(OPTIONAL_RESUME_KEYS):
        raise TypeError(f"resume state with unknown keys {sorted(unknown)}")
    return fields


def read_state(path: Path, steps: int | None = None) -> dict:
    """The training state saved in ``path`` (a resume state or a trunk's snapshot), loaded as tensors
    and plain values only and checked (``check_resume``); raises whatever makes it unusable."""
    import torch

    return check_resume(torch.load(path, map_location="cpu", weights_only=True), steps)


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
