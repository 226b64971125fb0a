"""Nothing since the layer move: PoSE's skip-wise position ids are ``pose_positions`` in
posbench/attention/positions.py, whose docstring describes them (PoSE is an extension method,
``extend.method=pose``, not an evaluation variant)."""

from __future__ import annotations
