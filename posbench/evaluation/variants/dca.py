"""Rows ``rope+dca``: Dual Chunk Attention (An et al. 2024, "Training-Free Long-Context Scaling of Large
Language Models"; HKUNLP/ChunkLlama ``chunkllama_attn_replace.py``), training-free. The window is cut in
chunks of c = chunk_size - local_window tokens; keys sit at j mod c, and a query's position depends on
where the key is:

    same chunk        q at i mod c                         (intra-chunk: the true distance)
    previous chunk    q at min(i mod c + c, chunk_size)    (successive-chunk: keeps locality)
    earlier chunks    q at min(2c - 1, chunk_size)         (inter-chunk: one constant position)

so no distance exceeds chunk_size < L_train. As in the reference, q and k are scaled by
mscale = 0.05 ln(N / L_train) + 1 past the training length (the logits by its square). Three passes,
query-chunked (posbench/attention/kernels.py); the reference merges three flash-attention calls by their
log-sum-exp, which is the same softmax.

Toy scale: the reference's defaults as fractions of the pretraining length, chunk_size = 3 L / 4 and
local_window = L / 8 (48 and 8 at 64).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from posbench.core.errors import PosbenchError
from posbench.core.params import at_least, param, positive
from posbench.evaluation.variants import register
from posbench.evaluation.variants.extender import RotaryExtender


@register("dca")
class DualChunkAttention(RotaryExtender):
    @dataclass
    class Params:
        chunk_size: Optional[int] = param(None, positive)  # None: 3 train_len / 4
        local_window: Optional[int] = param(None, at_least(0))  # None: train_len / 8
        mscale: bool = True  # the reference's 0.05 ln s + 1 on q and k

        def check(self) -> None:
            cs, lw = self.chunk_size, self.local_window
            if (cs is not None and cs < 2) or (lw is not None and lw < 0) or (cs is not None and lw is not None and lw >= cs):
                raise PosbenchError(f"dca needs chunk_size >= 2 and 0 <= local_window < chunk_size, got {cs} and {lw}")

    def suffix(self) -> str:
        p = self.params
        return ("+dca" + (f"c{p.chunk_size}" if p.chunk_size is not None else "")
                + (f"l{p.local_window}" if p.local_window is not None else "") + ("" if p.mscale else "-nomscale"))

    def sizes(self, train_len: int) -> tuple[int, int]:
        cs = self.params.chunk_size or max(2, train_len * 3 // 4)
        lw = self.params.local_window if self.params.local_window is not None else train_len // 8
        if lw >= cs:
            raise PosbenchError(f"dca local_window {lw} must be smaller than chunk_size {cs}")
        return cs, lw

    def pieces(self, positions, train_len):
        cs, lw = self.sizes(train_len)
        c = cs - lw
        chunk, inner = torch.div(positions, c, rounding_mode="floor"), positions % c
        inter = (torch.full_like(positions, min(2 * c - 1, cs)), inner, None)
        succ = ((inner + c).clamp(max=cs), inner, lambda i, j: chunk[j] == chunk[i] - 1)
        intra = (inner, inner, lambda i, j: chunk[j] == chunk[i])
        return [inter, succ, intra]

    def logit_factor(self, length: int, train_len: int) -> float:
        s = length / train_len
        return (0.05 * math.log(s) + 1.0) ** 2 if self.params.mscale and s > 1 else 1.0
