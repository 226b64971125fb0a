"""RoPE: rotary position embedding (Su et al. 2021, "RoFormer"), and its context extensions.

Channel pairs (x_a, x_b) of every query and key are rotated by the angle p * theta_i,

    theta_i = base^(-2i / d),  i = 0 .. d/2 - 1,  base = 10000,

so that q_m . k_n depends on the positions only through the offset m - n. We pair channel i with
channel i + d/2 (the "rotate half" layout of GPT-NeoX); this is a fixed permutation of the paper's
adjacent pairs and gives the same model class.

Context extension, chosen at evaluation time (never stored in a checkpoint; an extension run,
posbench/extend.py, also trains with one static method: ``extend_to``), with
scale factor s and L_train the training length. The static methods (linear, ntk, yarn) use one
factor at every length, as a user extending a model to a target context would: ``eval.rope_factor``,
or by default the longest evaluated multiple; their rows are named with it (``rope+yarn@16x``), so
rows with different factors are never mixed. ``dynamic_ntk`` derives s from the current length.
Reference code followed for the formulas: HF transformers ``modeling_rope_utils.py``
(``_compute_linear_scaling_rope_parameters``, ``_compute_dynamic_ntk_parameters``,
``_compute_yarn_parameters``: beta_fast 32, beta_slow 1, attention factor 0.1 ln s + 1).

* ``linear``      Position Interpolation (Chen et al. 2023): theta_i / s, i.e. positions / s.
* ``ntk``         NTK-aware scaling (bloc97 2023): base' = base * s^(d / (d - 2)).
* ``dynamic_ntk`` NTK with s = max(1, L / L_train) taken from the current length L.
* ``yarn``        YaRN (Peng et al. 2023): per dimension, with r_i = L_train * theta_i / (2 pi) the
                  number of rotations over the training length, interpolate (theta_i / s) where
                  r_i < alpha = 1, keep theta_i where r_i > beta = 32, and ramp linearly between;
                  logits are multiplied by (0.1 ln s + 1)^2 ("attention temperature").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from posbench.encodings import register
from posbench.encodings.base import PositionalEncoding
from posbench.errors import PosbenchError


def _linear(head_dim, base, factor, original_length, length, **_):
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim) / factor, 1.0


def _ntk(head_dim, base, factor, original_length, length, **_):
    base = base * factor ** (head_dim / (head_dim - 2))
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim), 1.0


def _dynamic_ntk(head_dim, base, factor, original_length, length, **_):
    if original_length is None or length is None:
        raise ValueError("dynamic_ntk needs original_length and length")
    return _ntk(head_dim, base, max(1.0, length / original_length), original_length, length)


def _yarn(head_dim, base, factor, original_length, length, beta_fast=32.0, beta_slow=1.0, **_):
    if original_length is None:
        raise ValueError("yarn needs original_length (the training length)")
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    if factor <= 1.0:
        return inv_freq, 1.0
    # dimension index at which the training length holds `rotations` full turns
    def dim_of(rotations: float) -> float:
        return head_dim * math.log(original_length / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(dim_of(beta_fast)), 0)
    high = min(math.ceil(dim_of(beta_slow)), head_dim - 1)
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / max(high - low, 1e-3)).clamp(0, 1)
    # ramp 0: high frequency, many turns in training -> keep (extrapolate); ramp 1 -> interpolate
    inv_freq = inv_freq * (1 - ramp) + (inv_freq / factor) * ramp
    return inv_freq, (0.1 * math.log(factor) + 1.0) ** 2


ROPE_SCALINGS = {"linear": _linear, "ntk": _ntk, "dynamic_ntk": _dynamic_ntk, "yarn": _yarn}


def rope_frequencies(
    head_dim: int,
    base: float = 10000.0,
    scaling: str | None = None,
    factor: float = 1.0,
    original_length: int | None = None,
    length: int | None = None,
    **kwargs,
) -> tuple[torch.Tensor, float]:
    """(inverse frequencies [head_dim // 2], attention scale) for plain RoPE or a scaling type.

    The attention scale multiplies the q.k logits (on top of 1/sqrt(head_dim)); it is 1 except for
    YaRN. ``scaling``: None, or one of ``linear``, ``ntk``, ``dynamic_ntk``, ``yarn``.
    """
    if head_dim % 2:
        raise ValueError(f"RoPE needs an even head dimension, got {head_dim}")
    if scaling is None:
        return _linear(head_dim, base, 1.0, original_length, length)
    if scaling not in ROPE_SCALINGS:
        raise ValueError(f"unknown RoPE scaling {scaling!r}; valid: {', '.join(ROPE_SCALINGS)}")
    return ROPE_SCALINGS[scaling](head_dim, base, factor, original_length, length, **kwargs)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def apply_rotation(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return (x * cos + rotate_half(x) * sin).to(x.dtype)


def rotation_tables(positions: torch.Tensor, inv_freq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of shape [L, head_dim] for the given positions (computed in float64, then cast)."""
    angles = positions.to(torch.float64)[:, None] * inv_freq.to(positions.device)[None, :]
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().float(), angles.sin().float()


@register("rope")
class RoPE(PositionalEncoding):
    family, colour, order = "rotary", "#1f77b4", 0  # the report's column, line colour and place in it
    uses_rotation = True
    translation_invariant = True

    @dataclass
    class Params:
        base: float = 10000.0

    def __init__(self, shape, params):
        super().__init__(shape, params)
        if shape.head_dim % 2:
            raise PosbenchError(f"{self.name} needs an even head dimension, got d_model/n_heads = {shape.head_dim}")
        # plain attributes, not buffers: frequencies are a function of the config (and of the
        # evaluation's scaling), so a checkpoint can never carry stale ones back in
        self.inv_freq, self.attention_scale = rope_frequencies(shape.head_dim, params.base)
        self.extension: tuple[str, float] | None = None  # (scaling, factor) of an extension run

    def extend_to(self, method, factor):
        """Train and evaluate with a static scaling at one factor, as PI and YaRN fine-tune."""
        if method not in ("none", *STATIC_SCALINGS):
            raise PosbenchError(f"extend.method={method!r}; valid for rope: none, {', '.join(STATIC_SCALINGS)}")
        self.extension = None if method == "none" else (method, float(factor))
        self.configure_eval(self.name, self.shape.train_len, None)

    def prepare(self, positions):
        return rotation_tables(positions, self.inv_freq)

    def rotate(self, q, k, state):
        cos, sin = state
        return apply_rotation(q, cos, sin), apply_rotation(k, cos, sin)

    def softmax_scale(self):
        return None if self.attention_scale == 1.0 else self.attention_scale / math.sqrt(self.shape.head_dim)

    def eval_variants(self, eval_cfg):
        for s in eval_cfg.rope_scaling:
            if s not in ROPE_SCALINGS:
                raise PosbenchError(f"unknown eval.rope_scaling {s!r}; valid: {', '.join(ROPE_SCALINGS)}")
        factor = static_factor(eval_cfg)
        named = [f"{self.name}+{s}" if s in DYNAMIC_SCALINGS else f"{self.name}+{s}@{factor:g}x" for s in eval_cfg.rope_scaling]
        return [self.name] + named + self.window_variants(eval_cfg)

    def configure_eval(self, variant, length, eval_cfg):
        scaling = variant.split("+", 1)[1].split("@")[0] if "+" in variant else None
        if scaling is None and self.extension is not None:  # an extension run's own frequencies
            scaling, factor = self.extension
        elif scaling in DYNAMIC_SCALINGS:
            factor = max(1.0, length / self.shape.train_len)
        else:
            factor = static_factor(eval_cfg) if scaling else 1.0
        self.inv_freq, self.attention_scale = rope_frequencies(
            self.shape.head_dim, self.params.base, scaling, factor, self.shape.train_len, length
        )


DYNAMIC_SCALINGS = ("dynamic_ntk",)  # the factor follows the current length
STATIC_SCALINGS = ("linear", "ntk", "yarn")  # one factor at every length


def static_factor(eval_cfg) -> float:
    """s of the static scalings: ``eval.rope_factor``, or the longest evaluated multiple."""
    return float(eval_cfg.rope_factor or max(1.0, max(eval_cfg.multiples)))
