"""Scoring a task's examples with made-up models (a perfect one, a constant one) through the evaluator's own
scorer (posbench/evaluation/task_scores.py), for the task tests' chance checks."""

import numpy as np
import torch

from posbench.evaluation.task_scores import score_predictions

TEXT = np.frombuffer(b"def f(x):\n    return x + 1\nclass A:\n    pass\n" * 400, dtype=np.uint8)


def scores(task, length: int, predict, examples: int = 400, condition=None, seed: int = 0) -> tuple[float, float]:
    """(exact, token accuracy) of ``predict`` (batch -> argmax predictions [B, L]) on evaluation-style examples."""
    b = task.batch(np.random.default_rng(seed), examples, length, TEXT, condition=condition)
    exact, right, tokens = score_predictions(predict(b), b.y, b.answer)
    return exact / examples, right / tokens


def perfect(b) -> torch.Tensor:
    return b.y.clone()


def constant(byte: str):
    return lambda b: torch.full_like(b.y, ord(byte))
