"""Rows ``<encoding>+randpos``: a model trained on randomized positions (Ruoss et al. 2023,
``train.random_positions``; posbench/attention/positions.py) scored as it was trained, on a sorted sample of
L positions from [0, M) drawn per batch of windows (the authors' code samples at evaluation too).
Added for every run trained that way, beside the plain row (positions 0..L-1). A run trained on real-valued
positions (``train.random_positions_kind=float``, Random Float Sampling) is scored on sorted reals from
[0, M) (``continuous``), as the paper samples at inference too; the row keeps the name ``+randpos``."""

from __future__ import annotations

from dataclasses import dataclass

from posbench.attention.positions import sample_positions
from posbench.evaluation.variants import register
from posbench.evaluation.variants.base import Variant


@register("randpos")
class RandomizedPositions(Variant):
    @dataclass
    class Params:
        continuous: bool = False  # real positions (Random Float Sampling), as the model was trained

    def applies_to(self, encoding) -> bool:
        return encoding.shape.max_position > encoding.shape.train_len

    def positions(self, length: int, max_position: int, batch: int):
        return sample_positions(max_position, length, seed=length, step=batch, continuous=self.params.continuous)

    def record(self) -> dict:
        # integer rows keep the record they always had
        return {"variant": self.name, **({"continuous": True} if self.params.continuous else {})}

    def undefined_reason(self, length: int, max_position: int) -> str | None:
        if length > max_position:
            return f"randomized positions are drawn from [0, {max_position}), fewer than {length}"
        return None
