"""Rows ``rope+<type>@<s>x`` (static) and ``rope+<type>`` (dynamic): a RoPE model evaluated with a
context-extension scaling (posbench/attention/rope_scalings.py) instead of its trained frequencies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import ROPE_SCALINGS, evaluable_scalings
from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.core.registry import plugin_code
from posbench.evaluation.variants import register
from posbench.evaluation.variants.base import Variant


@register("rope_scaling")
class RopeScalingVariant(Variant):
    linestyle = "-"
    encoding_decides = True  # applies_to reads the encoding only (report/load.py asks it again)

    @dataclass
    class Params:
        type: str = "yarn"
        factor: Optional[float] = param(None, positive)  # static types: s at every length (None only for a dynamic type)

        def check(self) -> None:
            kind = ROPE_SCALINGS.find(self.type)
            if kind is None or not kind.evaluates:
                raise PosbenchError(f"unknown RoPE scaling {self.type!r}; valid: {', '.join(evaluable_scalings())}")
            if not kind.dynamic:
                if self.factor is None:
                    raise PosbenchError(f"RoPE scaling {self.type} is static: give its factor (eval.rope_factor)")
                with plugin_code("RoPE scaling", self.type, getattr(kind.validate, "__module__", None), "checking its factor"):
                    kind.validate(self.factor)

    @property
    def colour(self) -> str | None:
        return ROPE_SCALINGS.get(self.params.type).colour

    def suffix(self) -> str:
        p = self.params
        return f"+{p.type}" if ROPE_SCALINGS.get(p.type).dynamic else f"+{p.type}@{p.factor:g}x"

    def applies_to(self, encoding) -> bool:
        if self.params.type == "longrope" and not getattr(encoding, "longrope", True):
            return False  # factors searched on another model's weights would pass for this one's
        return getattr(encoding, "rope_scalable", False)

    def undefined_for(self, encoding, length: int) -> str | None:
        """A type without frequencies at this model's size (LongRoPE without searched factors)."""
        kind, shape = ROPE_SCALINGS.get(self.params.type), encoding.shape
        if kind.unavailable is None or kind.dynamic:
            return None
        return kind.unavailable(getattr(encoding, "rotary_dim", shape.head_dim), encoding.params.base, self.params.factor,
                                shape.train_len)

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        kind = ROPE_SCALINGS.get(self.params.type)
        factor = max(1.0, length / train_len) if kind.dynamic else self.params.factor
        return opts.replace(rope=(self.params.type, float(factor)))
