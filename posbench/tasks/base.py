"""The interface of a synthetic task: a deterministic generator of byte sequences with the
positions whose predictions are scored.

An example of window length L is L + 1 tokens; the model reads the first L and predicts the last
L, and ``answer`` marks the predictions that count (the passkey's digits, MQAR's values, the
copied string). With ``loss: answer`` training minimises the cross-entropy on those positions
only, as the synthetic tasks of Ruoss et al. 2023 and Arora et al. 2023 (Zoology) do: the filler
around them is there to be read, not predicted. ``loss: mixed`` adds the language-model loss on
every position of the window: where the filler is real text (passkey), predicting it trains the
induction circuits (copy what followed an earlier occurrence) that retrieval needs, as a
pretrained model has them before it is asked for a passkey.

Evaluation scores a prediction as the argmax at each answer position with the true tokens before
it as input (teacher forcing); an example counts as correct (exact match) when every one of its
answer positions is right, which is exactly whether greedy decoding would produce the answer (it
deviates at the first wrong argmax, and never otherwise).

Every example depends only on (seed, step or evaluation cell, index): a resumed run sees the same
batches, and every run of a sweep is scored on the same evaluation examples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.tasks.loss import token_loss

PAD = 0  # filler byte of the token-only tasks (copy's left padding)
LOSSES = ("answer", "mixed")


@dataclass
class TaskBatch:
    x: torch.Tensor  # [B, L] inputs
    y: torch.Tensor  # [B, L] targets (inputs shifted by one)
    answer: torch.Tensor  # [B, L] bool: the scored predictions


class Task:
    """Base class. Subclasses declare ``Params`` (checked against the yaml like an encoding's),
    ``condition`` (the name of the evaluation grid's second axis, e.g. ``depth``; None for
    none), ``metric`` and implement ``example``."""

    name = "task"
    condition: str | None = None
    # what the report calls accuracy: ``exact`` (every answer token right: passkey) or
    # ``token_accuracy`` (each answer token counts: MQAR's queries, copy's bytes)
    metric = "exact"

    @dataclass
    class Params:
        eval_examples: int = param(64, positive)  # examples per evaluation cell (length x condition)
        # ``answer``: cross-entropy on the answer positions only; ``mixed``: plus the language-model
        # loss on every position of the window (the filler text, the needle, the answer)
        loss: str = "answer"

        def check(self) -> None:
            if self.loss not in LOSSES:
                raise PosbenchError(f"task.loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")

    # which records it makes (posbench/evaluation/plan.py): "task" (accuracy per length x condition) or
    # "perplexity" (language modelling)
    record_kind = "task"

    def __init__(self, params: Any):
        self.params = params

    @property
    def mixed_loss(self) -> bool:
        return self.params.loss == "mixed"

    # -- training (language modelling overrides these: posbench/tasks/lm.py; evaluation dispatches on
    # ``record_kind``: posbench/evaluation/) ------------------------------------------------------------
    def training_batch(self, tokens: np.ndarray, batch_size: int, length: int, seed: int,
                       step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(inputs, targets, scored) of one training step, from (seed, step) alone: examples with
        their filler from ``tokens`` (``scored``: the answers)."""
        b = self.at_step(step).batch(np.random.default_rng([seed, step]), batch_size, length, tokens, train=True)
        return b.x, b.y, b.answer

    def validation_batch(self, tokens: np.ndarray, batch_size: int, length: int, seed: int,
                         i: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The trainer's ``i``-th fixed validation batch: a training batch (from the validation split) of
        the task as it is evaluated; a task whose training examples change with the step (a curriculum)
        validates on the examples it is trained towards (posbench/tasks/curriculum.py: the task itself,
        not a stage)."""
        return self.training_batch(tokens, batch_size, length, seed, i)

    def at_step(self, step: int) -> "Task":
        """The task whose training examples ``step`` draws: itself, or a copy at the stage of its
        curriculum (posbench/tasks/curriculum.py); depends on the step alone, so a resumed run draws
        the same batches."""
        return self

    def loss(self, logits: torch.Tensor, y: torch.Tensor, scored: torch.Tensor | None) -> torch.Tensor:
        """The training objective (``loss``: the answers, or ``mixed``: plus every token)."""
        return token_loss(logits, y, scored, self.mixed_loss)

    @property
    def source(self) -> str:
        """What the attention diagnostics were measured on."""
        return self.name

    # -- what subclasses define -------------------------------------------------------------------
    def conditions(self) -> list:
        """The values of the second evaluation axis (``[None]`` when there is none)."""
        return [None]

    def train_condition(self, rng: np.random.Generator, length: int):
        """The condition of one training example (drawn per example)."""
        return None

    def example(self, rng: np.random.Generator, length: int, condition, text: np.ndarray) -> tuple:
        """(tokens [length + 1] uint8, answer [length] bool) for windows of ``length`` tokens, the
        targets being tokens[1:]; or (tokens, answer, targets [length]) where an answer is a label
        only, not the next input (MQAR, as Zoology); ``text``: a byte stream for filler (the
        training or the validation split)."""
        raise NotImplementedError

    def min_length(self) -> int:
        """The shortest window an example fits in."""
        return 2

    def check_window(self, train_len: int) -> None:
        """Refuse settings that do not fit training windows of ``train_len`` beyond ``min_length`` (a
        curriculum stage of an algorithmic task: an input longer than fits); PosbenchError, one line."""

    def answer_distance(self, length: int, condition) -> int | None:
        """How many tokens back from the first scored answer position the content it must retrieve lies
        in a window of ``length`` (None: the task does not say): what a windowed model must reach."""
        return None

    def chance(self, condition) -> float:
        """The accuracy (in the task's metric) of a model that knows the form of the answer but not
        which one it is: the level a model that has not learned to retrieve sits at. NaN: unknown."""
        return float("nan")

    def chance_at(self, condition, length: int | None) -> float:
        """``chance`` at evaluation windows of ``length`` tokens, for a task whose baseline depends on the
        length (common_words: more distinct words in a longer list); the others: ``chance``."""
        return self.chance(condition)

    # -- batching ---------------------------------------------------------------------------------
    def batch(self, rng: np.random.Generator, batch_size: int, length: int, text: np.ndarray,
              condition=None, train: bool = False) -> TaskBatch:
        seqs, masks, targets = [], [], []
        for _ in range(batch_size):
            c = self.train_condition(rng, length) if train else condition
            s, m, *t = self.example(rng, length, c, text)
            seqs.append(s)
            masks.append(m)
            targets.append(t[0] if t else s[1:])
        tokens = torch.from_numpy(np.stack(seqs).astype(np.int64))
        return TaskBatch(tokens[:, :-1], torch.from_numpy(np.stack(targets).astype(np.int64)),
                         torch.from_numpy(np.stack(masks)))


def text_window(rng: np.random.Generator, text: np.ndarray, n: int) -> np.ndarray:
    """``n`` consecutive bytes from a random place of ``text`` (the filler of the passkey task)."""
    if n <= 0:
        return np.zeros(0, dtype=np.uint8)
    start = int(rng.integers(0, len(text) - n))
    return np.asarray(text[start : start + n], dtype=np.uint8)


def scatter_in_filler(rng: np.random.Generator, text: np.ndarray, pieces: list[bytes], tail: bytes,
                      length: int) -> np.ndarray:
    """An example of ``length + 1`` bytes: ``pieces`` (needles, facts, statements) in their order at
    sorted random places of real text (``text_window``), then ``tail`` (the question and its answer).
    The filler is drawn first and the cuts second, the order every task that uses it drew them in, so
    the examples of a seed stay the same."""
    n_filler = length + 1 - sum(map(len, pieces)) - len(tail)
    filler = text_window(rng, text, n_filler)
    cuts = np.sort(rng.integers(0, n_filler + 1, size=len(pieces)))
    parts, start = [], 0
    for cut, piece in zip(cuts, pieces):
        parts += [filler[start:cut], np.frombuffer(piece, np.uint8)]
        start = cut
    parts += [filler[start:], np.frombuffer(tail, np.uint8)]
    return np.concatenate(parts).astype(np.uint8)
