"""What a training run does besides its steps, bundled: progress, tracking, probes, checkpoints
(resume states and a trunk's snapshots), the answer to an interrupt and the CPU-share watch.

``Hooks`` says which (every field optional: a bare ``Hooks()`` trains with a progress bar and
nothing saved); ``Hooks.running`` starts them for one call of posbench.training.trainer.train_model,
whose step rules (posbench/training/steps.py) say at which steps each is called.

An interrupt (posbench/core/interrupts.py): a Ctrl-C or SIGTERM is answered after the current step
with a resume state at that step, so it loses no work; one in the last step (or in a step that
diverged) is deferred until the caller has saved the run. The CPU-share watch (posbench/core/cpu_share.py)
warns once when a CPU run's threads do not find free cores, or its throughput falls.
"""

from __future__ import annotations

import contextlib
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import torch

from posbench.core.files import atomic_torch_save
from posbench.core.cpu_share import SlowdownWatch, check_threads_at_start
from posbench.core.errors import Interrupted
from posbench.core.interrupts import StopRequest, defer, stop_at_step_boundary
from posbench.core.progress import progress
from posbench.core.tracking import Tracker
from posbench.store.rundir import RunDir
from posbench.training.parallel import Processes
from posbench.training.steps import StepRules

Probe = Callable[[torch.nn.Module], "list[dict]"]


@dataclass(frozen=True)
class Hooks:
    """The hooks of one training call. ``desc``: the progress bar's and the interrupt line's name;
    ``tracker``: gets each history entry; ``resume_dir``: the run folder (posbench/store/rundir.py's
    RunDir) a resume state is saved in at the rules' save steps and on an interrupt, and restored
    from; ``snapshot_path(step)``: the file that gets the full resume state at the rules' snapshot
    steps; ``probe(model)``: the records of the rules' probe steps (called in eval mode). In a data-parallel run only process 0 shows
    progress, watches the CPU, tracks, probes and writes (posbench/training/parallel.py)."""

    desc: str = "train"
    tracker: Tracker = field(default_factory=Tracker)
    resume_dir: RunDir | None = None
    snapshot_path: Callable[[int], Path] | None = None
    probe: Probe | None = None

    @contextlib.contextmanager
    def running(self, rules: StepRules, start: int, device: torch.device,
                processes: Processes = Processes()) -> Iterator[Running]:
        """The hooks of a call that trains steps ``start``..``rules.steps - 1``."""
        if processes.main:
            check_threads_at_start(device)  # a shared CPU: say so and what to do
        bar = progress(range(start, rules.steps), initial=start, total=rules.steps, desc=self.desc, unit="step",
                       enabled=processes.main)
        with stop_at_step_boundary(self.desc) as stop:
            yield Running(self if processes.main else Hooks(self.desc, resume_dir=self.resume_dir), rules, bar, stop,
                          SlowdownWatch(device) if processes.main else None, processes)
        bar.close()


class Running:
    """The hooks while a call trains: the steps to take (through the progress bar), and what each
    kind of step does besides training."""

    def __init__(self, hooks: Hooks, rules: StepRules, bar, stop: StopRequest, slowdown: SlowdownWatch | None,
                 processes: Processes):
        self.hooks, self.rules, self.bar, self.stop, self.slowdown = hooks, rules, bar, stop, slowdown
        self.steps, self.processes, self.writes = bar, processes, processes.main

    def logged(self, entry: dict) -> None:
        """A history entry was made (not one that diverged)."""
        if self.slowdown is not None:
            self.slowdown.update(entry["tokens_per_s"], entry["step"])
        self.hooks.tracker.log({k: v for k, v in entry.items() if k != "step"}, step=entry["step"])
        self.bar.set_postfix(loss=f"{entry['loss']:.3f}", tok_s=f"{entry['tokens_per_s']:,.0f}")

    def probe(self, model: torch.nn.Module) -> list[dict]:
        records = self.hooks.probe(model) if self.hooks.probe is not None else []
        model.train()  # the probe evaluates in eval mode
        return records

    def after(self, step: int, state: Callable[[], dict]) -> None:
        """The end of ``step`` (1-based): a snapshot, a resume state, or the answer to an interrupt
        (``state()``: the full training state after it)."""
        h, saving = self.hooks, self.writes and self.hooks.resume_dir is not None
        if self.writes and self.rules.snapshots(step) and h.snapshot_path is not None:
            atomic_torch_save(h.snapshot_path(step), state())
        if saving and self.rules.saves(step):
            h.resume_dir.save_resume(state())
        if self._stop_requested() and not self.rules.last(step):  # at the step boundary: nothing of this step is lost
            if saving:
                h.resume_dir.save_resume(state())
            self.bar.close()
            raise self.stop.stop(step, self.rules.steps, saved=h.resume_dir is not None)

    def _stop_requested(self) -> bool:
        """A stop asked of this process, or (data parallel) of any: all stop at the same step."""
        if self.processes.world == 1:
            return self.stop.requested()
        if self.processes.any(self.stop.requested()) and not self.stop.requested():
            self.stop.signum = signal.SIGTERM  # another process was signalled (torchrun forwards SIGTERM to all)
        return self.stop.requested()

    def finished(self, completed: bool) -> None:
        """The loop ended (its last step, or one that diverged): a request in it is raised once the
        caller has saved the run."""
        if self._stop_requested():
            defer(self.stop.trained(self.rules.steps) if completed else Interrupted(self.stop.signum))
