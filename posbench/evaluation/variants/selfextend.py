"""Rows ``rope+selfextend``: SelfExtend (Jin et al. 2024, "LLM Maybe LongLM: Self-Extend LLM Context
Window Without Tuning"; datamllab/LongLM ``self_extend_patch/Llama.py``), training-free. Pairs closer
than a neighbour window W keep their positions; the others use grouped positions (floor division by a
group size G), the query's shifted so that the two meet at distance W:

    logit_ij = q_i R(i - j) k_j                                           if i - j < W
             = q_i R(i // G + W - W / G) . R(j // G) k_j                   otherwise

(``group_query_position = query_position // group_size_1 + group_size_2 - group_size_2 / group_size_1``;
the reference's group_size_1 is G, group_size_2 is W). Two passes, query-chunked (posbench/attention/kernels.py).

Toy scale: W = L_train / 4 (16 at 64; the reference suggests 512 to 1536 at 4096), and G by default
per evaluated length N: the smallest with (L_train - W) G + W >= N, the reference README's rule for
its input (G = 1 up to L_train: plain RoPE there; 21 at 16 x 64). The log-n query scaling of the
reference (``scale_base``, off by default there) is left out.
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


@register("selfextend")
class SelfExtend(RotaryExtender):
    @dataclass
    class Params:
        window: Optional[int] = param(None, positive)  # W, the neighbour window; None: train_len // 4
        group: Optional[int] = param(None, positive)  # G; None: the smallest with (train_len - W) G + W >= the evaluated length

        def check(self) -> None:
            for key in ("window", "group"):
                if (v := getattr(self, key)) is not None and v < 1:
                    raise PosbenchError(f"selfextend {key} must be a positive integer (or null), got {v}")

    def suffix(self) -> str:
        p = self.params
        return "+selfextend" + (f"g{p.group}" if p.group is not None else "") + (f"w{p.window}" if p.window is not None else "")

    def sizes(self, length: int, train_len: int) -> tuple[int, int]:
        """(W, G) at windows of ``length`` tokens."""
        w = self.params.window or max(1, train_len // 4)
        if self.params.group is not None:
            return w, self.params.group
        if length <= train_len:
            return w, 1
        return w, max(1, math.ceil((length - w) / max(1, train_len - w)))

    def pieces(self, positions, train_len):
        w, g = self.sizes(len(positions), train_len)
        pos = positions.double()
        shift = w - w / g if positions.max() >= w else 0.0  # the reference's _re_group_size_2
        grouped = (torch.div(pos, g, rounding_mode="floor") + shift, torch.div(pos, g, rounding_mode="floor"), None)
        neighbours = (pos, pos, lambda i, j: positions[i] - positions[j] < w)
        return [grouped, neighbours]
