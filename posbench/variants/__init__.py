"""The old import path of the evaluation variants' plug-in API (now posbench/evaluation/variants/),
kept for plug-ins written against it (``from posbench.variants import Variant, register``). posbench
itself imports the new path (.importlinter forbids this package inside)."""

from posbench.attention.options import AttentionOptions
from posbench.evaluation.variants import VARIANTS, Row, make_variant, register, rows
from posbench.evaluation.variants.base import RowTemperature, Variant

__all__ = ["AttentionOptions", "Row", "RowTemperature", "VARIANTS", "Variant", "make_variant", "register", "rows"]
