"""Probes during training (``eval.during_training``): the validation perplexity at a few lengths at
fractions of the training budget, scored like the final evaluation on a smaller token set."""

from __future__ import annotations

from dataclasses import replace

import torch

from posbench.evaluation.perplexity import evaluate_model
from posbench.evaluation.resolved import ResolvedEval
from posbench.evaluation.settings import EvalConfig
from posbench.model.transformer import LanguageModel

PROBE_FIELDS = ("variant", "protocol", "length", "multiple", "token_set", "loss", "ppl")


def probe_settings(eval_cfg: EvalConfig) -> EvalConfig:
    """What a during-training evaluation scores: the plain encoding at 1x and at the longest
    multiple, nonoverlapping, on the final evaluation's tokens (so its last point is the table's)."""
    return replace(eval_cfg, multiples=sorted({1, max(eval_cfg.multiples)}), protocols=["nonoverlapping"],
                   rope_scaling=[], bca=[], temperature=[], variants=[])


def probe_steps(fractions, steps: int) -> list[int]:
    """The training steps (1-based) of ``eval.during_training``'s fractions of the budget."""
    return sorted({min(steps, max(1, round(f * steps))) for f in fractions})


def during_training_probe(ev: ResolvedEval, device: torch.device):
    """A callable for trainer.train_model's ``probe``: the records of ``probe_settings`` on the
    final evaluation's text (``ev``, with_scored_text's). Its rows carry no extension tag (as they
    never have: an extension run's probes name the plain encoding)."""
    probe_ev = replace(ev.with_settings(probe_settings(ev.settings)), tag="")

    def probe(model: LanguageModel) -> list[dict]:
        records, _ = evaluate_model(model, probe_ev, device, progress=False)
        return [{k: r[k] for k in PROBE_FIELDS} for r in records]

    return probe
