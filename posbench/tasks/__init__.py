"""Tasks: ``task=`` chooses what a run trains on and how it is scored.

``lm`` (the default) is language modelling on the corpus, scored by perplexity
(posbench/evaluation/evaluate.py). The others are byte-level synthetic tasks (posbench/tasks/base.py), trained
at ``train_len`` and scored by accuracy at multiples of it (posbench/evaluation/task_scores.py):

    passkey   retrieve a k-digit key hidden at a depth of real text (Mohtashami & Jaggi 2023)
    mqar      multi-query associative recall (Arora et al. 2023)
    copy      copy a random string (Ruoss et al. 2023; Kazemnejad et al. 2023)
    variable_tracking   follow chains of assignments to a value (RULER, Hsieh et al. 2024)
    common_words        name the most frequent words of a list (RULER)
    parity_check, reverse_string, duplicate_string, binary_addition, bucket_sort
                        the Chomsky-hierarchy tasks (Deletang et al. 2023; Ruoss et al. 2023), decoder
                        layout: posbench/tasks/algorithmic.py
    flip_flop           the last written bit at every read (Liu et al. 2023)
    babi                bAbI tasks 1-3, the facts hidden in text (Weston et al. 2015; BABILong, Kuratov et al. 2024)
    nolima              a needle found only through an association learned in training (NoLiMa, Modarressi et al. 2025)

Some tasks take a curriculum over training steps (``task.curriculum``, posbench/tasks/curriculum.py).

A built-in task is one module here decorated with ``@register("name")``; another package's comes
through the entry-point group ``posbench.tasks`` or a ``module:attr`` path (posbench/core/registry.py).
"""

from __future__ import annotations

from typing import Any, Mapping

from posbench.core.errors import PosbenchError
from posbench.core.params import make_typed
from posbench.core.registry import Registry, plugin_code, subclass_check
from posbench.tasks.base import Task, TaskBatch

LM = "lm"
TASKS: Registry[type[Task]] = Registry("task", "posbench.tasks", "posbench.tasks", subclass_check(Task))
register = TASKS.register


def available() -> list[str]:
    """Every task name, language modelling first."""
    return [LM, *(n for n in TASKS.names() if n != LM)]


def task_class(name: str, target: str | None = None) -> type[Task]:
    """The class of task ``name`` (``lm``: language modelling); PosbenchError for an unknown name."""
    if name not in TASKS.names() and ":" not in name and target is None:
        raise PosbenchError(f"unknown task {name!r}; valid: {', '.join(available())}")
    return TASKS.get(name, target)


def build_task(name: str, params: Mapping[str, Any] | None = None, target: str | None = None) -> Task:
    """The task of ``task.name`` with its checked parameters."""
    cls = task_class(name, target)
    typed = make_typed("task", name, cls.Params, params or {})
    with plugin_code("task", name, cls.__module__, "being built"):
        return cls(typed)


__all__ = ["LM", "TASKS", "Task", "TaskBatch", "available", "build_task", "register", "task_class"]
