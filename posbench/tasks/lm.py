"""Language modelling: the default task (``task=lm``). Every next token of windows of the corpus is
a target; a model is scored by perplexity at multiples of its training length (posbench/evaluate.py,
posbench/protocols.py), not by accuracy. Written as a task so that training, the evaluation plan
and the scoring treat every task alike; language-model runs keep the ids they always had (no
``task`` in their identity: posbench/results.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from posbench.data import sample_batch
from posbench.tasks import register
from posbench.tasks.base import Task


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
        from posbench.trainer import token_loss

        return token_loss(logits, y, None)

    def plan(self, encoding, eval_cfg, train_len, n_val, corpus_hash, tag=""):
        from posbench.plan import perplexity_plan

        return perplexity_plan(encoding, eval_cfg, train_len, n_val, corpus_hash, tag)

    def score(self, model, val_tokens, train_len, eval_cfg, device, *, corpus_hash, doc_separator, skip, tag, options,
              progress):
        from posbench.evaluate import evaluate_model

        return evaluate_model(model, val_tokens, train_len, eval_cfg, device, progress, doc_separator, corpus_hash,
                              skip, tag, options)

    def attention_inputs(self, length, n, val_tokens, eval_cfg, train_len) -> torch.Tensor:
        """[n, length] consecutive windows of the validation text from the first scored token."""
        from posbench.protocols import first_scored

        stream = torch.from_numpy(np.asarray(val_tokens).astype(np.int64))
        start = min(first_scored(eval_cfg, train_len), len(stream) - length)
        ends = [e for e in range(start + length, len(stream), length)][:n]
        return stream[torch.as_tensor(ends)[:, None] + torch.arange(-length, 0)]

    @property
    def source(self) -> str:
        return "text"
