"""posbench/evaluation/task_scores.py: exact match needs every answer token; token accuracy counts each."""

import torch

from posbench.evaluation.task_scores import score_predictions


def test_exact_match_needs_every_answer_token_and_token_accuracy_counts_each():
    y = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4]])
    answer = torch.tensor([[False, True, True, True], [False, True, True, True]])
    pred = torch.tensor([[9, 2, 3, 4], [1, 2, 0, 4]])  # the first is wrong only where nothing is scored
    assert score_predictions(pred, y, answer) == (1, 5, 6)
