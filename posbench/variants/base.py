"""The old import path of ``Variant`` and ``AttentionOptions`` (now posbench/evaluation/variants/base.py
and posbench/attention/options.py), kept for plug-ins written against it."""

from posbench.attention.options import AttentionOptions
from posbench.evaluation.variants.base import RowTemperature, Variant

__all__ = ["AttentionOptions", "RowTemperature", "Variant"]
