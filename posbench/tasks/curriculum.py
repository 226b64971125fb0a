"""A curriculum over training steps: one setting of a task (MQAR's pairs, variable tracking's hops, the
longest input of reverse_string and duplicate_string) rises by stages of ``stage_steps`` steps each::

    curriculum: [4, 8]   stage_steps: 1000   (the task's own value: 16)
    steps 0..999: 4      steps 1000..1999: 8      from step 2000 on: 16

The stages are the values before the task's own one, rising to it; from the end of the last stage the
task trains at its own value, the value it is evaluated and validated at. A stage depends on the step
alone, and every batch on (seed, step) (posbench/tasks/base.py), so a curriculum is reproducible and a
resumed run gets the same batches (nothing of it is saved). Stages in steps, not in fractions of
``train.steps``: a task knows its step, not the run's budget; a preset that sets ``train.steps`` sets
``stage_steps`` beside it. An empty ``curriculum`` (the default) is no curriculum: the task's examples
at every step are the ones it made before the setting existed, and run ids leave the setting out
(posbench/store/identity.py, OLD_TASK_BEHAVIOUR).

Curricula of this form: Zoology's MQAR trains on a mix of 4 to 64 pairs (Arora et al. 2023); the
algorithmic references draw input lengths uniformly up to their maximum (Deletang et al. 2023), and a
growing maximum is the length curriculum of Zaremba & Sutskever 2014 ("Learning to Execute",
arXiv 1410.4615, their "naive" curriculum: the difficulty raised in stages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.tasks.base import Task

NO_CURRICULUM = {"curriculum": [], "stage_steps": 1000}  # the defaults: what run ids leave out


@dataclass
class StagedParams(Task.Params):
    """The settings of a task with a curriculum: the stages' values before the task's own, rising, and the
    steps of each stage."""

    curriculum: List[int] = param(rule=positive, default_factory=list)
    stage_steps: int = param(1000, positive)

    def check(self) -> None:
        super().check()
        check_rising(self.curriculum)


class StagedTask(Task):
    """A task whose training examples follow a curriculum (``Params``: StagedParams). Subclasses make a
    copy of the task at a stage's value (``at_value``; this one unchanged)."""

    def at_value(self, value: int) -> Task:
        raise NotImplementedError

    def at_step(self, step: int) -> Task:
        p = self.params
        if step // p.stage_steps >= len(p.curriculum):
            return self
        return self.at_value(p.curriculum[step // p.stage_steps])

    def validation_batch(self, tokens, batch_size, length, seed, i):
        # the task as evaluated, whatever the step: the stage of step i would be the curriculum's first
        b = self.batch(np.random.default_rng([seed, i]), batch_size, length, tokens, train=True)
        return b.x, b.y, b.answer


def stage_value(curriculum: List[int], stage_steps: int, step: int, final: int) -> int:
    """The value at training ``step`` (0-based): the stage's, or ``final`` after the last stage."""
    stage = step // stage_steps
    return curriculum[stage] if stage < len(curriculum) else final


def check_rising(curriculum: List[int], final: int | None = None, what: str = "") -> None:
    """The stages rise, each above the one before, and (``final`` given) to the task's own value (``what``
    names it)."""
    stages = [*curriculum] if final is None else [*curriculum, final]
    if any(b <= a for a, b in zip(stages, stages[1:])):
        to = "rise, each stage above the one before" if final is None else f"rise to {what} ({final})"
        raise PosbenchError(f"task.curriculum must {to}, got {list(curriculum)}")


__all__ = ["NO_CURRICULUM", "StagedParams", "StagedTask", "check_rising", "stage_value"]
