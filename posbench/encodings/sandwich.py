"""Sandwich (Chi et al. 2023, "Dissecting Transformer Length Extrapolation via the Lens of
Receptive Field Analysis", arXiv 2212.10356): the parameter-free bias left when the sinusoidal
embeddings' cross terms are dropped and only their inner product p_i . p_j is kept, scaled per head:

    b[h, i, j] = ( sum_{k=1}^{d/2} cos( (i - j) * 10000^(-2k/d) )  -  d/2 ) / (8 h / H),  h = 1..H

with d the head dimension. The constant -d/2 makes the bias 0 on the diagonal (softmax ignores it).
Reference code followed: NVIDIA NeMo,
``nemo/collections/nlp/modules/common/megatron/position_embedding/sandwich_relative_position_embedding.py``
(``inv_freq = 10000^(-2k/d)`` for k = 1..d/2, ``hidden_size`` = the size per attention head, the
sum divided by ``h * 8 / H``), which fixes the choices the paper's equation leaves open (the
dimension d, the per-head scale). Deviation: none; ``d_sandwich`` may override d (null: the head
dimension, as NeMo).
"""

from dataclasses import dataclass

import torch

from posbench.core.params import above, param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


def sandwich_table(max_distance: int, n_heads: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """[H, max_distance + 1] bias for distances 0..max_distance (float64)."""
    k = torch.arange(1, d // 2 + 1, dtype=torch.float64)
    inv_freq = base ** (-2 * k / d)
    dist = torch.arange(max_distance + 1, dtype=torch.float64)
    inner = torch.cos(dist[:, None] * inv_freq[None, :]).sum(-1) - d / 2  # [distances]
    scale = torch.arange(1, n_heads + 1, dtype=torch.float64) * 8 / n_heads  # 8h/H
    return inner[None, :] / scale[:, None]


@register("sandwich")
class Sandwich(PositionalEncoding):
    family, colour, order = "score bias", "#ff9896", 1  # the report's column, line colour and place in it
    integer_positions = True  # a table indexed by position or distance: real-valued positions are refused
    translation_invariant = True

    @dataclass
    class Params:
        d_sandwich: int | None = param(None, positive)  # null: the head dimension (NeMo's hidden size per head)
        base: float = param(10000.0, above(1))

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.d = params.d_sandwich or shape.head_dim
        self._tables: dict = {}  # (longest distance, device) -> [H, distances] table, float32

    def bias(self, q_pos, k_pos, layer):
        dist = (q_pos[:, None] - k_pos[None, :]).clamp(min=0)
        # a function of distance only: evaluate it once per distance, then index (no H x L x L x d);
        # kept per length and device, since every layer and forward asks for the same one
        key = (int(dist.max()), str(dist.device))
        if key not in self._tables:
            self._tables[key] = sandwich_table(key[0], self.shape.n_heads, self.d, self.params.base).float().to(dist.device)
        return self._tables[key][:, dist]
