"""RoPE's context-extension scalings: one compute and one validate function per type, in one
appendable registry, after HF transformers' ``modeling_rope_utils.py`` (``ROPE_INIT_FUNCTIONS`` and
``_validate_*_rope_parameters``).

With scale factor s and L_train the training length (head dimension d, theta_i = base^(-2i/d)):

* ``linear``      Position Interpolation (Chen et al. 2023): theta_i / s, i.e. positions / s
                  (HF ``_compute_linear_scaling_rope_parameters``).
* ``ntk``         NTK-aware scaling (bloc97 2023): base' = base * s^(d / (d - 2)).
* ``dynamic_ntk`` NTK with s = max(1, L / L_train) taken from the current length L
                  (HF ``_compute_dynamic_ntk_parameters``).
* ``yarn``        YaRN (Peng et al. 2023): per dimension, with r_i = L_train * theta_i / (2 pi) the
                  number of rotations over the training length, interpolate (theta_i / s) where
                  r_i < beta_slow = 1, keep theta_i where r_i > beta_fast = 32, ramp linearly
                  between; logits are multiplied by (0.1 ln s + 1)^2 ("attention temperature";
                  HF ``_compute_yarn_parameters``, its attention_factor applied to q and k).

A static type uses one factor at every length (``eval.rope_factor``, or the longest evaluated
multiple; rows named ``rope+yarn@16x``); a dynamic one derives it from each length (``rope+dynamic_ntk``).
Another package adds a type through the entry-point group ``posbench.rope_scalings`` (a
``RopeScaling``), and every RoPE model can then be evaluated with it (``eval.rope_scaling=[...]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from posbench.errors import PosbenchError
from posbench.registry import Registry

# (head_dim, base, factor, original_length, length) -> (inverse frequencies [head_dim // 2] in float64,
# factor on the q.k logits)
Compute = Callable[[int, float, float, int, int], tuple[torch.Tensor, float]]


def _check_rope_scaling(name: str, obj) -> None:
    if not isinstance(obj, RopeScaling):
        raise PosbenchError(f"RoPE scaling {name!r} is not a posbench.variants.rope_scalings.RopeScaling (got {obj!r})")


@dataclass(frozen=True)
class RopeScaling:
    compute: Compute
    validate: Callable[[float], None]  # raises PosbenchError for a factor this type cannot use
    dynamic: bool = False  # the factor follows the evaluated length
    colour: str | None = None  # the report's colour of its rows (None: derived from its name)
    extends: bool = True  # usable as extend.method (a fine-tune at the target length)


ROPE_SCALINGS: Registry[RopeScaling] = Registry("RoPE scaling", "posbench.rope_scalings", check=_check_rope_scaling,
                                               sort=False)


def plain_frequencies(head_dim: int, base: float) -> torch.Tensor:
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)


def _at_least_one(kind: str) -> Callable[[float], None]:
    def validate(factor: float) -> None:
        if not factor >= 1:
            raise PosbenchError(f"RoPE scaling {kind} needs a factor of at least 1, got {factor:g}")
    return validate


def _compute_linear(head_dim, base, factor, original_length, length):
    return plain_frequencies(head_dim, base) / factor, 1.0


def _compute_ntk(head_dim, base, factor, original_length, length):
    return plain_frequencies(head_dim, base * factor ** (head_dim / (head_dim - 2))), 1.0


def _compute_dynamic_ntk(head_dim, base, factor, original_length, length):
    return _compute_ntk(head_dim, base, max(1.0, length / original_length), original_length, length)


def _compute_yarn(head_dim, base, factor, original_length, length, beta_fast=32.0, beta_slow=1.0):
    inv_freq = plain_frequencies(head_dim, base)
    if factor <= 1.0:
        return inv_freq, 1.0

    def dim_of(rotations: float) -> float:  # dimension index at which L_train holds `rotations` full turns
        return head_dim * math.log(original_length / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(dim_of(beta_fast)), 0)
    high = min(math.ceil(dim_of(beta_slow)), head_dim - 1)
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / max(high - low, 1e-3)).clamp(0, 1)
    # ramp 0: high frequency, many turns in training -> keep (extrapolate); ramp 1 -> interpolate
    inv_freq = inv_freq * (1 - ramp) + (inv_freq / factor) * ramp
    return inv_freq, (0.1 * math.log(factor) + 1.0) ** 2


# the colours are the report's (tab20 pairs: related methods share a hue with RoPE and xPos)
ROPE_SCALINGS.register("linear")(RopeScaling(_compute_linear, _at_least_one("linear"), colour="#ff7f0e"))
ROPE_SCALINGS.register("ntk")(RopeScaling(_compute_ntk, _at_least_one("ntk"), colour="#9edae5"))
ROPE_SCALINGS.register("dynamic_ntk")(RopeScaling(_compute_dynamic_ntk, lambda f: None, dynamic=True,
                                                  colour="#ffbb78", extends=False))
ROPE_SCALINGS.register("yarn")(RopeScaling(_compute_yarn, _at_least_one("yarn"), colour="#aec7e8"))


def scaled_frequencies(scaling: str, head_dim: int, base: float, factor: float, original_length: int,
                       length: int) -> tuple[torch.Tensor, float]:
    """(inverse frequencies, factor on the logits) of ``scaling`` at ``factor`` for windows of ``length``."""
    kind = ROPE_SCALINGS.get(scaling)
    kind.validate(factor)
    return kind.compute(head_dim, base, factor, original_length, length)
