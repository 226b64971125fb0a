"""Scoring a model on a synthetic task at multiples of its training length.

Per row (the model's own and its evaluation-time variants', as for perplexity: posbench.evaluation.plan), length L and condition
(passkey depth, MQAR pairs): ``eval_examples`` examples, the same for every run (they depend on the
task's settings, the validation split and the cell, never on the run). Recorded per cell:

    exact           fraction of examples whose every answer position is right (= greedy decoding's
                    exact match; posbench/tasks/base.py)
    token_accuracy  fraction of answer positions right

An ``example_set`` string names what was scored (task settings, examples per cell, corpus), so a
re-evaluation with other settings is told apart, like the token sets of perplexity records.
"""

from __future__ import annotations

import numpy as np
import torch

from posbench.core.device import autocast
from posbench.core.progress import progress as progress_bar
from posbench.evaluation.plan import task_plan
from posbench.evaluation.resolved import ResolvedEval
from posbench.tasks.base import Task

EVAL_SEED = 4_242  # examples of evaluation cells; training draws from (run seed, step) instead
BATCH_TOKENS = 16384


def eval_batches(task: Task, length: int, condition, index: int, text: np.ndarray):
    """The evaluation examples of one cell, in batches of about BATCH_TOKENS tokens."""
    n, per = task.params.eval_examples, max(1, BATCH_TOKENS // length)
    rng = np.random.default_rng([EVAL_SEED, length, index])
    return [task.batch(rng, min(per, n - s), length, text, condition=condition) for s in range(0, n, per)]


@torch.inference_mode()
def evaluate_task(model, ev: ResolvedEval, device, progress: bool = True, skip: set | None = None) -> list[dict]:
    """One record per variant x length x condition of the task ``ev.task``, its filler from the
    validation text ``ev.text`` (``skip``: keys already evaluated)."""
    model.eval()
    enc, train_len, task, val_text = model.encoding, ev.train_len, ev.task, ev.tokens()
    conditions = task.conditions()
    todo = [p for p in task_plan(enc, ev) if p.key not in (skip or set())]
    records = []
    bar = progress_bar(total=sum(p.length * task.params.eval_examples for p in todo), unit="tok", desc=f"eval {task.name}",
                       enabled=progress)  # a bar on a terminal, log lines elsewhere (posbench/core/progress.py)
    try:
        for cell in todo:
            row, L, c = cell.row, cell.length, cell.condition
            i = conditions.index(c)
            opts = row.options(ev.options, L, train_len)
            base = {"variant": row.name, "task": task.name, "length": L, "multiple": L / train_len,
                    "condition": c, "example_set": cell.key[-1], "row": row.record()}
            if (reason := row.undefined_reason(enc, L)) is not None:
                records.append({**base, "examples": 0, "exact": None, "token_accuracy": None, "reason": reason})
                bar.update(L * task.params.eval_examples)
                continue
            exact = tokens = right = examples = 0
            for b_i, b in enumerate(eval_batches(task, L, c, i, val_text)):
                positions = row.positions(L, enc.shape.max_position, b_i)
                with autocast(device):
                    pred = model(b.x.to(device), None if positions is None else positions.to(device), opts).argmax(-1).cpu()
                e, r, t = score_predictions(pred, b.y, b.answer)
                exact, right, tokens, examples = exact + e, right + r, tokens + t, examples + len(b.x)
                bar.update(b.x.numel())
            records.append({**base, "examples": examples, "exact": exact / examples,
                            "token_accuracy": right / tokens, "reason": None})
    finally:
        bar.close()
    return records


def score_predictions(pred: torch.Tensor, y: torch.Tensor, answer: torch.Tensor) -> tuple[int, int, int]:
    """(examples with every answer position right, answer positions right, answer positions) of a
    batch of argmax predictions [B, L] against targets [B, L]; ``answer`` marks the scored ones."""
    ok = (pred == y) & answer
    return int((ok | ~answer).all(-1).sum()), int(ok.sum()), int(answer.sum())
