"""The step rules: given a step (1-based, the steps done after it), whether the run logs, validates,
probes, saves a resume state or a snapshot there, and whether it is the last.

One set of rules for every caller: posbench.training.trainer.train_model follows them, and a budget
branch (posbench/jobs/branches.py) asks them which history entries, validation losses and probes the
run of its budget records, so that the trunk records them and a branch's cut of the trunk's state is
that run's, bit for bit.

Validation loss is measured every ``val_every`` steps, at the last step, at half of the budget (so
every run shows how much its 1x loss still changed over its last doubling of steps), at every probe
step and at any step the caller adds (a WSD trunk: every step any of its budgets validates at). A
step that validates also logs (its loss and learning rate go into the history with the validation
loss). A resume state is saved every ``checkpoint_every`` steps but not at the last (the run's
checkpoint supersedes it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Collection


def half_step(steps: int) -> int:
    """The step that starts the last doubling of a budget: validation loss is always measured there."""
    return max(1, steps // 2)


@dataclass(frozen=True)
class Recorded:
    """The steps up to some step at which a run logs, validates and probes (what its history,
    validation losses and probe records hold)."""

    logs: frozenset[int]
    validates: frozenset[int]
    probes: frozenset[int]


@dataclass(frozen=True)
class StepRules:
    """When a run of ``steps`` steps logs, validates, probes and saves (``of`` makes them from the
    ``train`` settings)."""

    steps: int
    log_every: int
    val_every: int
    checkpoint_every: int
    validate_at: frozenset[int] = frozenset()  # besides every val_every-th: half, last, probes, the caller's
    probe_at: frozenset[int] = frozenset()
    snapshot_at: frozenset[int] = frozenset()  # full training state to a file of its own (a WSD trunk's branch points)

    @classmethod
    def of(cls, tc, probes: Collection[int] = (), validate_at: Collection[int] = (),
           snapshots: Collection[int] = ()) -> StepRules:
        """The rules of a run with the ``train`` settings ``tc`` (a TrainConfig), probing at ``probes``
        and validating also at ``validate_at``."""
        return cls(tc.steps, tc.log_every, tc.val_every, tc.checkpoint_every,
                   frozenset({half_step(tc.steps), tc.steps, *probes, *validate_at}), frozenset(probes),
                   frozenset(snapshots))

    def last(self, step: int) -> bool:
        return step == self.steps

    def validates(self, step: int) -> bool:
        return step % self.val_every == 0 or step in self.validate_at

    def logs(self, step: int) -> bool:
        return step % self.log_every == 0 or self.validates(step)

    def probes(self, step: int) -> bool:
        return step in self.probe_at

    def saves(self, step: int) -> bool:
        """A periodic resume state after this step (none at the last: the run's checkpoint is it)."""
        return step % self.checkpoint_every == 0 and not self.last(step)

    def snapshots(self, step: int) -> bool:
        return step in self.snapshot_at

    def recorded(self, upto: int) -> Recorded:
        """The steps up to ``upto`` (inclusive) at which this run logs, validates and probes."""
        steps = range(1, upto + 1)
        return Recorded(frozenset(s for s in steps if self.logs(s)), frozenset(s for s in steps if self.validates(s)),
                        frozenset(s for s in steps if self.probes(s)))
