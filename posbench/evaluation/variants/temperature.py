"""Rows ``<encoding>+temp<c>``: an attention temperature for any encoding, every logit (content and
position terms) multiplied by 1 + c ln(L / train_len) at windows of L > train_len (1 at and below
the training length). YaRN's temperature argument (Peng et al. 2023: sqrt(1/t) = 0.1 ln s + 1 on q
and k) applied to encodings that are not rotary, as logn / SSMax-style scalings do."""

from __future__ import annotations

import math
from dataclasses import dataclass

from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.core.params import at_least, param
from posbench.evaluation.variants import register
from posbench.evaluation.variants.base import Variant


@register("temperature")
class Temperature(Variant):
    linestyle = ":"

    @dataclass
    class Params:
        c: float = param(0.1, at_least(0))

        def check(self) -> None:
            if not 0 <= self.c <= 10:
                raise PosbenchError(f"eval.temperature holds coefficients c in [0, 10] (logits x (1 + c ln s)), "
                                    f"got {self.c:g}")

    def suffix(self) -> str:
        return f"+temp{self.params.c:g}"

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        return opts.replace(logit_scale=opts.logit_scale * logit_scale(self.params.c, length, train_len))


def logit_scale(c: float, length: int, train_len: int) -> float:
    """1 + c ln s with s = length / train_len (1 at and below the training length)."""
    return 1.0 + c * math.log(max(1.0, length / train_len))
