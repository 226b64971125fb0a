"""Rows ``<encoding>+headscale``: HeadScale (Wang et al. 2024, "Length Generalization of Causal
Transformers without Position Encoding", arXiv 2404.12224), a temperature per layer and head found
for the longer length with the model frozen.

    softmax_j(lambda_{l,h} q_i . k_j / sqrt(d_h)),   lambda learned at window length L, every other weight frozen

The paper finds NoPE's failure past its training length tied to attention that spreads out (its
entropy grows), and sharpens it with one scale per head, tuned at the target length. Reference code:
AntNLP/nope_head_scale ``models/llama_nope.py`` (``ScaleMixin``, ``softmax_scale_type: HS``:
``scale_param = full((num_heads,), softmax_scale)`` per attention layer, the queries multiplied by
``scale_param / sqrt(head_dim)``; ``freeze_type: BASE``: ``model.requires_grad_(False)`` then only the
scales train), ``scripts/run_hs.sh`` and ``configs/tnl_hs.yaml`` + ``configs/basic.yaml`` (the 8K
run from a 2K NoPE TinyLlama: init 1.6, 200 steps at lr 0.1 or 0.05, blocks of the target length,
8 sequences per step, AdamW betas (0.9, 0.95), weight decay 0, warmup 10 % then cosine, gradient
clipping at 1).

In posbench it is an evaluation-time variant: before the row is scored at a length L > train_len,
the scales are fitted at L (``fit``) on windows of the run's **training split** (never the validation
text that is scored), with every weight of the model frozen, for ``steps`` steps of ``batch``
windows; then the row is scored with them (``AttentionOptions.query_scale``, per layer and head: a
``HeadScales``). At L <= train_len the row is the model as trained (scales 1), as the paper leaves
the training length alone. The scales multiply the queries of every layer without a window or
temperature of its own (like +logn), so the variant applies to any encoding that has such a layer;
the paper's method is NoPE's (``nope+headscale``). Seeded by L: the same windows, the same scales.

Scaled to toy size (stated): 100 steps (the paper: 200) of 4 windows (the paper: 8) at lr 0.1, init
1.0 (the trained model's own temperature; the reference's runs include init 1.0 beside 1.6 and 1.7,
which were chosen for their 4x and 9x extensions, and no rule gives the init for other factors).
The reference declares a lower bound ``scale_lb`` that no code reads: no bound here either. The
fitted scales are logged, and every fitted length costs ``steps`` forward and backward passes at L.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.evaluation.variants import register
from posbench.evaluation.variants.base import RowTemperature, calibration_of, split_windows

log = logging.getLogger(__name__)

FIT_SEED = 404  # the windows a fit reads: (FIT_SEED, L, step), so the same length always sees the same text


@dataclass(frozen=True)
class HeadScales:
    """A row temperature per layer and head: ``scales`` [n_layers, H]; called by the model's ``temper``
    with the layer (``per_layer``) -> [H, 1], broadcast over the queries."""

    scales: torch.Tensor
    per_layer = True

    def __call__(self, positions: torch.Tensor, keys_seen: torch.Tensor, layer: int) -> torch.Tensor:
        return self.scales[layer][:, None].to(positions.device)


@dataclass(frozen=True)
class Unfitted:
    """The row temperature of a length nothing was fitted at: a forward with it is refused (one line),
    never scored as if the scales were 1."""

    length: int
    per_layer = True

    def __call__(self, positions, keys_seen, layer):
        raise PosbenchError(f"+headscale has no scales fitted at {self.length} tokens: it is a perplexity row, "
                            "fitted before it is scored (posbench.evaluation.perplexity)")


@register("headscale")
class HeadScale(RowTemperature):
    linestyle = "--"

    @dataclass
    class Params:
        steps: int = param(100, positive)  # optimiser steps per fitted length (the paper: 200)
        batch: int = param(4, positive)  # windows of length L per step (the paper: 8)
        lr: float = param(0.1, positive)  # the paper's 0.1 (and 0.05)
        init: float = param(1.0, positive)  # every scale's start (the paper: 1.6 at 4x, 1.7 at 9x)

    def __init__(self, params=None):
        super().__init__(params)
        self.fitted: dict[int, torch.Tensor] = {}  # window length -> scales [n_layers, H]

    def fit(self, model, ev, length: int, device) -> None:
        if length <= ev.train_len or length in self.fitted:
            return
        tokens = calibration_of(ev, length, "+headscale fits its scales")
        self.fitted[length] = fit_head_scales(model, tokens, length, self.params, ev.options, device)
        s = self.fitted[length]
        log.info("headscale at L=%d: scales mean %.3f, min %.3f, max %.3f", length, float(s.mean()), float(s.min()), float(s.max()))

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        if length <= train_len:
            return opts
        scales = self.fitted.get(length)
        return opts.replace(query_scale=HeadScales(scales) if scales is not None else Unfitted(length))


def fit_head_scales(model, tokens: np.ndarray, length: int, p, options: AttentionOptions, device) -> torch.Tensor:
    """The per-layer, per-head scales [n_layers, H] that minimise the loss of windows of ``length``
    tokens of ``tokens`` with every weight of ``model`` frozen (the reference's freeze_type BASE):
    AdamW (betas 0.9, 0.95, no weight decay), linear warmup over 10 % of ``p.steps`` then cosine to 0,
    gradients clipped at 1 (the reference's HF Trainer settings)."""
    # the evaluation scores under inference mode; the fit needs autograd for its scales alone
    with torch.inference_mode(False), torch.enable_grad():
        return _fit(model, tokens, length, p, options, device)


def _fit(model, tokens: np.ndarray, length: int, p, options: AttentionOptions, device) -> torch.Tensor:
    shape = model.encoding.shape
    scales = torch.full((shape.n_layers, shape.n_heads), float(p.init), device=device, requires_grad=True)
    optimiser = torch.optim.AdamW([scales], lr=p.lr, betas=(0.9, 0.95), weight_decay=0.0)
    warmup = max(1, math.ceil(0.1 * p.steps))

    def factor(step: int) -> float:  # HF get_cosine_schedule_with_warmup
        if step < warmup:
            return step / warmup
        return 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / max(1, p.steps - warmup)))

    frozen = [(q, q.requires_grad) for q in model.parameters()]
    for q, _ in frozen:
        q.requires_grad_(False)
    try:
        for step in range(p.steps):
            windows = torch.from_numpy(split_windows(tokens, length, p.batch, [FIT_SEED, length, step]).astype(np.int64))
            x, y = windows[:, :-1].to(device), windows[:, 1:].to(device)
            for group in optimiser.param_groups:
                group["lr"] = p.lr * factor(step)
            logits = model(x, None, options.replace(query_scale=HeadScales(scales)))
            loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([scales], 1.0)
            optimiser.step()
    finally:
        for q, was in frozen:
            q.requires_grad_(was)
    return scales.detach().cpu()
