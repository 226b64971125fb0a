"""Rows ``rope+rerope``: ReRoPE (Su 2023, "Rectified Rotary Position Embeddings"; bojone/rerope
``rerope_patch.py``), training-free. Relative distances are clipped at a window w:

    logit_ij = q_i R(i - j) k_j           if i - j < w
             = q_i R(w) k_j               otherwise (q rotated at w, k not rotated)

so no distance beyond w - and none beyond the training length - is ever used; and, as in the reference
(``query_states *= log(position_ids + 1) / log(training_length)`` clipped at 1), queries past the training
length are scaled by log(i + 1) / log(L_train) (``logn``). Two passes (within and beyond the window),
query-chunked (posbench/attention/kernels.py ``piecewise_rotary_attention``): nothing L x L per head is held.

Toy scale: w = L_train / 4 (16 at 64; the reference's README reports w = 1024 at 4096, its code default
512). Leaky ReRoPE (the reference's ``leaky_rerope_patch.py``: distances beyond w divided by k) is not built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.evaluation.variants import register
from posbench.evaluation.variants.extender import RotaryExtender


@register("rerope")
class ReRoPE(RotaryExtender):
    @dataclass
    class Params:
        window: Optional[int] = param(None, positive)  # w; None: train_len // 4
        logn: bool = True  # the reference's log-n scaling of queries past the training length

        def check(self) -> None:
            if self.window is not None and self.window < 1:
                raise PosbenchError(f"rerope window must be a positive integer (or null: train_len / 4), got {self.window}")

    def suffix(self) -> str:
        p = self.params
        return "+rerope" + (f"w{p.window}" if p.window is not None else "") + ("" if p.logn else "-nologn")

    def clip_distance(self, train_len: int) -> int:
        """w: distances at or beyond it are clipped (not ``window``: that class attribute marks a control)."""
        return self.params.window or max(1, train_len // 4)

    def pieces(self, positions, train_len):
        w = self.clip_distance(train_len)
        beyond = (torch.full_like(positions, w), torch.zeros_like(positions), None)
        within = (positions, positions, lambda i, j: positions[i] - positions[j] < w)
        return [beyond, within]

    def query_scale(self, positions, train_len):
        if not self.params.logn or train_len < 2:
            return None
        return ((positions.double() + 1).log() / math.log(train_len)).clamp(min=1).float()
