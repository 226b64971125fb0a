"""Learned absolute position embeddings (Gehring et al. 2017; GPT-2, Radford et al. 2019).

    x_p <- x_p + E[p],  E in R^{max_positions x d}, learned

The table has ``max_positions`` rows (default: the training length), so positions past it have no
embedding at all. Rather than clamp or wrap silently, the encoding reports such lengths as not
defined and the evaluator records ``null`` with that reason.
"""

from dataclasses import dataclass

from torch import nn

from posbench.core.params import param, positive
from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding


@register("learned")
class Learned(PositionalEncoding):
    family, colour, order = "absolute / none", "#e377c2", 3  # the report's column, line colour and place in it
    integer_positions = True  # a table indexed by position or distance: real-valued positions are refused

    @dataclass
    class Params:
        max_positions: int | None = param(None, positive)  # None: the largest training position + 1

    def __init__(self, shape, params):
        super().__init__(shape, params)
        self.max_positions = params.max_positions or max(shape.train_len, shape.max_position)
        self.table = nn.Embedding(self.max_positions, shape.d_model)
        nn.init.normal_(self.table.weight, std=0.02)

    def undefined_reason(self, length):
        if length > self.max_positions:
            return f"learned table has {self.max_positions} positions, window needs {length}"
        return None

    def embed(self, x, positions):
        if int(positions.max()) >= self.max_positions:
            raise ValueError(f"position {int(positions.max())} is past the learned table ({self.max_positions} rows)")
        return x + self.table(positions)[None].to(x.dtype)
