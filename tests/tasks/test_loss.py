"""posbench/tasks/loss.py: the answer loss trains only the answers; the mixed loss adds every token."""

import pytest
import torch

from posbench.tasks import build_task


def test_the_answer_loss_trains_only_the_answers_and_the_mixed_loss_adds_every_token():
    from posbench.tasks.loss import token_loss

    logits = torch.zeros(1, 3, 5)
    logits[0, 1, 2] = 10.0
    y = torch.tensor([[0, 2, 4]])
    scored = torch.tensor([[False, True, False]])
    answers, every = token_loss(logits, y, scored), token_loss(logits, y, None)
    assert answers.item() < 1e-3 < every.item()
    assert token_loss(logits, y, scored, mixed=True).item() == pytest.approx(answers.item() + every.item())
    assert build_task("passkey").mixed_loss and not build_task("passkey", {"loss": "answer"}).mixed_loss
    assert not build_task("mqar").mixed_loss
