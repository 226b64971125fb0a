"""The old import path of the plug-in parameter rules (now posbench/core/params.py), kept for plug-ins
written against it. posbench itself imports posbench.core.params (.importlinter forbids this module inside)."""

from posbench.core.params import above, at_least, in_range, one_of, param, positive

__all__ = ["above", "at_least", "in_range", "one_of", "param", "positive"]
