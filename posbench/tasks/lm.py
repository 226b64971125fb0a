"""Language modelling: the default task (``task=lm``). Every next token of windows of the corpus is
a target; a model is scored by perplexity at multiples of its training length (posbench/evaluation/evaluate.py,
posbench/evaluation/protocols/), not by accuracy. Written as a task so that training, the evaluation plan
and the scoring treat every task alike; language-model runs keep the ids they always had (no
``task`` in their identity: posbench/store/identity.py)."""

from __future__ import annotations

from dataclasses import dataclass

from posbench.data.batches import sample_batch
from posbench.tasks import register
from posbench.tasks.base import Task
from posbench.tasks.loss import token_loss


@register("lm")
class LanguageModelling(Task):
    metric = "ppl"
    record_kind = "perplexity"

    @dataclass
    class Params:  # none: the corpus (data=) and the protocols (eval=) say what is read and scored
        pass

    def __init__(self, params=None):
        super().__init__(params if params is not None else self.Params())

    @property
    def mixed_loss(self) -> bool:
        return False

    def training_batch(self, tokens, batch_size, length, seed, step):
        """Random windows of the corpus, every target scored (``scored`` None)."""
        return (*sample_batch(tokens, batch_size, length, seed, step), None)

    def loss(self, logits, y, scored):
        return token_loss(logits, y, None)

    @property
    def source(self) -> str:
        return "text"
