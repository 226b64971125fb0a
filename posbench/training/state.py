"""Where the training loop stands, and what a resume state saves and restores of it.

A resume state (posbench/store/resume.py checks it; posbench/store/rundir.py's RunDir saves and loads it) holds the model, optimiser,
schedule and torch RNG state, the next step, the history, the probe records, the last losses and
the training time so far: everything a killed run needs to continue bit for bit (the batches
depend only on (seed, step), posbench/training/data.py).
"""

from __future__ import annotations

import copy
import logging
import time
import torch

from posbench.store.resume import resume_state
from posbench.store.rundir import RunDir

log = logging.getLogger("posbench")


class LoopState:
    """Where the loop stands: the next step, the history and probe records so far, the last losses,
    and the training time before this call (a resumed run's) with the clock of this one."""

    def __init__(self):
        self.start, self.history, self.wall_before = 0, [], 0.0
        self.last_loss, self.val_loss = float("nan"), None
        self.probes: list[dict] = []
        self.start_clock()

    def start_clock(self) -> None:
        """This call's training starts now (also the start of the first throughput interval)."""
        self.t0 = self.t_log = time.perf_counter()
        self.logged_step = self.start

    def tokens_per_s(self, step: int, tokens_per_step: int) -> float:
        """Training tokens/s since the last log step (a new interval starts at ``step``)."""
        now = time.perf_counter()
        rate = tokens_per_step * (step - self.logged_step) / max(now - self.t_log, 1e-9)
        self.t_log, self.logged_step = now, step
        return rate

    def exclude(self, since: float) -> None:
        """The time from ``since`` to now (validation, a probe) is not training throughput."""
        self.t_log += time.perf_counter() - since

    def wall(self) -> float:
        """Training seconds so far, over every call that trained this run."""
        return self.wall_before + time.perf_counter() - self.t0

    def saved(self, model, opt, sched, next_step: int) -> dict:
        """The resume state of this run after ``next_step`` steps."""
        return resume_state(model=model.state_dict(), optimizer=opt.state_dict(), scheduler=sched.state_dict(),
                            torch_rng=torch.get_rng_state(), next_step=next_step, history=self.history,
                            last_loss=self.last_loss, val_loss=self.val_loss, probes=self.probes,
                            train_wall_s=self.wall())

    def restore(self, folder: RunDir, model, opt, sched, steps: int | None = None, discard: bool = True) -> bool:
        """Apply a saved resume state (checked against a budget of ``steps``); on any mismatch put the
        model back as it was and start over (False: the caller makes its optimiser afresh), the file
        removed unless not ``discard`` (a data-parallel run's processes but the first)."""
        saved = folder.load_resume(steps)
        if saved is None:
            return False
        fresh = copy.deepcopy(model.state_dict())
        try:
            model.load_state_dict(saved["model"])
            opt.load_state_dict(saved["optimizer"])
            sched.load_state_dict(saved["scheduler"])
            torch.set_rng_state(saved["torch_rng"])
        except Exception as e:  # noqa: BLE001 - shapes or keys of another model: the file is useless here
            model.load_state_dict(fresh)
            if discard:
                folder.discard_resume(f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
            return False
        self.start, self.history, self.wall_before = saved["next_step"], list(saved["history"]), float(saved["train_wall_s"])
        self.last_loss, self.val_loss = saved["last_loss"], saved["val_loss"]
        self.probes = list(saved.get("probes", []))
        log.info("resuming from step %d (%s)", self.start, folder)
        return True
