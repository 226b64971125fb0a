"""The old import path of the RoPE scalings' plug-in API (now posbench/attention/rope_scalings.py),
kept for plug-ins written against it (docs/extending.md's example reuses YaRN's helpers)."""

from posbench.attention.rope_scalings import (
    ROPE_SCALINGS,
    RopeScaling,
    _at_least_one,
    _compute_yarn,
    evaluable_scalings,
    plain_frequencies,
    scaled_frequencies,
)

__all__ = ["ROPE_SCALINGS", "RopeScaling", "_at_least_one", "_compute_yarn", "evaluable_scalings",
           "plain_frequencies", "scaled_frequencies"]
