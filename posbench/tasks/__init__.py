"""Synthetic tasks: ``task=`` chooses what a run trains on and how it is scored.

``lm`` (the default) is language modelling on the corpus, scored by perplexity
(posbench/evaluate.py). The others are byte-level synthetic tasks (posbench/tasks/base.py), trained
at ``train_len`` and scored by accuracy at multiples of it (posbench/tasks/score.py):

    passkey   retrieve a k-digit key hidden at a depth of real text (Mohtashami & Jaggi 2023)
    mqar      multi-query associative recall (Arora et al. 2023)
    copy      copy a random string (Ruoss et al. 2023; Kazemnejad et al. 2023)
"""

from __future__ import annotations

from typing import Any, Mapping

from posbench.errors import PosbenchError
from posbench.params import make_typed
from posbench.tasks.base import Task, TaskBatch
from posbench.tasks.copy import Copy
from posbench.tasks.mqar import MQAR
from posbench.tasks.passkey import Passkey

LM = "lm"
TASKS: dict[str, type[Task]] = {"passkey": Passkey, "mqar": MQAR, "copy": Copy}
for _name, _cls in TASKS.items():
    _cls.name = _name


def available() -> list[str]:
    return [LM, *sorted(TASKS)]


def build_task(name: str, params: Mapping[str, Any] | None = None) -> Task | None:
    """The task of ``task.name`` with its checked parameters; None for language modelling."""
    if name == LM:
        if params:
            raise PosbenchError(f"task 'lm' has no parameters, got {sorted(params)[0]!r}")
        return None
    if name not in TASKS:
        raise PosbenchError(f"unknown task {name!r}; valid: {', '.join(available())}")
    return TASKS[name](make_typed("task", name, TASKS[name].Params, params or {}))


__all__ = ["LM", "TASKS", "Task", "TaskBatch", "available", "build_task"]
