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

* ``llama3``      Llama 3.1's scaling (Meta 2024; HF ``_compute_llama3_parameters``): with the wavelength
                  lambda_i = 2 pi / theta_i and L_orig = L_train, keep theta_i where lambda_i < L_orig /
                  high_freq_factor, interpolate (theta_i / s) where lambda_i > L_orig / low_freq_factor, and
                  between mix the two with weight (L_orig / lambda_i - low) / (high - low). The factors are
                  ratios to the original context (1 and 4: wavelengths beyond 1 and below 1/4 of it), so at toy
                  scale they stay as they are and L_orig is the training length (Llama 3.1: 8192 tokens, head
                  dimension 128, base 500,000; posbench small: 64 tokens, head dimension 32, base 10,000). The
                  bands then hold other shares of the pairs (``llama3_bands`` says which).
* ``longrope``    LongRoPE (Ding et al. 2024; HF ``_compute_longrope_parameters``, microsoft/LongRoPE): theta_i /
                  lambda_i with one searched rescale factor lambda_i per pair (``long_factor``) past L_train and
                  ``short_factor`` (here all 1: the model was trained at L_train) up to it; logits multiplied by
                  (1 + ln s / ln L_train) (HF's attention_factor sqrt(...) on q and k). The factors come from
                  posbench/attention/longrope.py's evolutionary search on the model's own text.
* ``abf``         Adjusted base frequency (Xiong et al. 2023, "Effective Long-Context Scaling of Foundation
                  Models"): base' = 50 x base, the paper's 10,000 -> 500,000, whatever the factor (the factor
                  names the target an extension run fine-tunes at). No HF type: HF raises rope_theta.
* ``drope``       DroPE (Gelberg et al. 2025; SakanaAI/DroPE ``custom_models/attention.py``): every frequency 0,
                  i.e. cos = 1 and sin = 0, the identity rotation: the model without its positional encoding,
                  recalibrated by a fine-tune at the training length. No factor (its rows: ``rope+drope``).
* ``pose``, ``pose_yarn`` PoSE (Zhu et al. 2024; dwzhu-pku/PoSE ``src/train_pose.py``): linear (or YaRN)
                  frequencies, fine-tuned at the training length on skip-wise position ids that reach the
                  target (posbench/attention/positions.py). Extension methods only (at evaluation they would be
                  ``linear``/``yarn``).

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

from posbench.attention.longrope import missing_reason, searched_factors
from posbench.attention.positions import pose_positions
from posbench.core.errors import PosbenchError
from posbench.core.registry import Registry

# (head_dim, base, factor, original_length, length) -> (inverse frequencies [head_dim // 2] in float64,
# factor on the q.k logits)
Compute = Callable[[int, float, float, int, int], tuple[torch.Tensor, float]]


def _check_rope_scaling(name: str, obj) -> None:
    if not isinstance(obj, RopeScaling):
        raise PosbenchError(f"RoPE scaling {name!r} is not a posbench.attention.rope_scalings.RopeScaling (got {obj!r})")


@dataclass(frozen=True)
class RopeScaling:
    compute: Compute
    validate: Callable[[float], None]  # raises PosbenchError for a factor this type cannot use
    dynamic: bool = False  # the factor follows the evaluated length (or, drope, there is none)
    colour: str | None = None  # the report's colour of its rows (None: derived from its name)
    extends: bool = True  # usable as extend.method (a fine-tune at the target length)
    evaluates: bool = True  # usable as eval.rope_scaling (PoSE's types are training recipes only)
    # an extension run with this method fine-tunes on windows of train_len (PoSE, DroPE) instead of the target
    finetune_at_train_len: bool = False
    # (train_len, target, seed, step) -> the positions of one fine-tuning step's windows (PoSE); None: 0..window-1
    training_positions: Callable[[int, int, int, int], torch.Tensor] | None = None
    # (head_dim, base, factor, original_length) -> why this type has no frequencies there (LongRoPE without
    # searched factors), or None
    unavailable: Callable[[int, float, float, int], str | None] | None = None


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


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    """YaRN's sqrt(1/t) = 0.1 mscale ln s + 1 (HF ``get_mscale``; 1 for s <= 1)."""
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _compute_yarn(head_dim, base, factor, original_length, length, beta_fast=32.0, beta_slow=1.0,
                  attention_factor=None, mscale=None, mscale_all_dim=None):
    """YaRN; the keyword options are HF's (``rope_parameters``): ``attention_factor`` on q and k (the
    logits get its square; None: 0.1 ln s + 1), or with both ``mscale`` and ``mscale_all_dim``
    (DeepSeek-V2/V3) mscale(s, mscale) / mscale(s, mscale_all_dim); ``beta_fast``/``beta_slow`` the
    rotation counts that bound the ramp."""
    inv_freq = plain_frequencies(head_dim, base)
    if attention_factor is None:
        attention_factor = (_yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all_dim)
                            if mscale and mscale_all_dim else _yarn_mscale(factor))
    if factor <= 1.0:
        return inv_freq, attention_factor ** 2

    def dim_of(rotations: float) -> float:  # dimension index at which L_train holds `rotations` full turns
        return head_dim * math.log(original_length / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(dim_of(beta_fast)), 0)
    high = min(math.ceil(dim_of(beta_slow)), head_dim - 1)
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / max(high - low, 1e-3)).clamp(0, 1)
    # ramp 0: high frequency, many turns in training -> keep (extrapolate); ramp 1 -> interpolate
    inv_freq = inv_freq * (1 - ramp) + (inv_freq / factor) * ramp
    return inv_freq, attention_factor ** 2


def _compute_llama3(head_dim, base, factor, original_length, length, low_freq_factor=1.0, high_freq_factor=4.0,
                    original_max_position_embeddings=None):
    """Llama 3.1 (HF ``_compute_llama3_parameters``, its names); L_orig = the training length unless given."""
    inv_freq = plain_frequencies(head_dim, base)
    old_len = original_max_position_embeddings or original_length
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > old_len / low_freq_factor, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    medium = (wavelen >= old_len / high_freq_factor) & (wavelen <= old_len / low_freq_factor)
    return torch.where(medium, (1 - smooth) * scaled / factor + smooth * scaled, scaled), 1.0


def llama3_bands(head_dim: int, base: float, original_length: int, low_freq_factor=1.0, high_freq_factor=4.0) -> dict:
    """How many rotary pairs llama3 keeps, ramps and interpolates at this size (the toy-scale note)."""
    wavelen = 2 * math.pi / plain_frequencies(head_dim, base)
    kept = int((wavelen < original_length / high_freq_factor).sum())
    interpolated = int((wavelen > original_length / low_freq_factor).sum())
    return {"kept": kept, "ramped": head_dim // 2 - kept - interpolated, "interpolated": interpolated}


def longrope_attention_factor(factor: float, original_length: int) -> float:
    """LongRoPE's sqrt(1 + ln s / ln L_orig) on q and k (HF's default attention_factor; 1 for s <= 1)."""
    return 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original_length))


def _compute_longrope(head_dim, base, factor, original_length, length, long_factor=None, short_factor=None,
                      attention_factor=None):
    """LongRoPE (HF ``_compute_longrope_parameters``): theta_i / ext_i with ext the long factors past
    the original length, the short ones up to it. Without ``long_factor``, the searched factors of
    this size (posbench/attention/longrope.py; PosbenchError when there are none)."""
    if long_factor is None:
        long_factor, short_factor = searched_factors(head_dim, base, original_length, factor)
    short_factor = [1.0] * (head_dim // 2) if short_factor is None else short_factor
    ext = torch.tensor(long_factor if length > original_length else short_factor, dtype=torch.float64)
    if ext.shape != (head_dim // 2,):
        raise PosbenchError(f"LongRoPE needs {head_dim // 2} rescale factors (one per rotary pair), got {len(ext)}")
    if attention_factor is None:
        attention_factor = longrope_attention_factor(factor, original_length)
    return plain_frequencies(head_dim, base) / ext, attention_factor ** 2


def _longrope_unavailable(head_dim, base, factor, original_length) -> str | None:
    return missing_reason(head_dim, base, original_length, factor)


ABF_BASE_MULTIPLIER = 50.0  # Xiong et al. 2023: base 10,000 -> 500,000


def _compute_abf(head_dim, base, factor, original_length, length):
    return plain_frequencies(head_dim, base * ABF_BASE_MULTIPLIER), 1.0


def _compute_drope(head_dim, base, factor, original_length, length):
    return torch.zeros(head_dim // 2, dtype=torch.float64), 1.0


def _pose_positions(train_len, target, seed, step):
    return pose_positions(train_len, target, seed, step)


# the colours are the report's (tab20 pairs: related methods share a hue with RoPE and xPos); tab20 is spent,
# so the later types take colours derived from their names (posbench/report/drawing/style.py)
ROPE_SCALINGS.register("linear")(RopeScaling(_compute_linear, _at_least_one("linear"), colour="#ff7f0e"))
ROPE_SCALINGS.register("ntk")(RopeScaling(_compute_ntk, _at_least_one("ntk"), colour="#9edae5"))
ROPE_SCALINGS.register("dynamic_ntk")(RopeScaling(_compute_dynamic_ntk, lambda f: None, dynamic=True,
                                                  colour="#ffbb78", extends=False))
ROPE_SCALINGS.register("yarn")(RopeScaling(_compute_yarn, _at_least_one("yarn"), colour="#aec7e8"))
ROPE_SCALINGS.register("llama3")(RopeScaling(_compute_llama3, _at_least_one("llama3")))
ROPE_SCALINGS.register("longrope")(RopeScaling(_compute_longrope, _at_least_one("longrope"),
                                               unavailable=_longrope_unavailable))
ROPE_SCALINGS.register("abf")(RopeScaling(_compute_abf, _at_least_one("abf")))
ROPE_SCALINGS.register("drope")(RopeScaling(_compute_drope, lambda f: None, dynamic=True,
                                            finetune_at_train_len=True))
ROPE_SCALINGS.register("pose")(RopeScaling(_compute_linear, _at_least_one("pose"), evaluates=False,
                                           finetune_at_train_len=True, training_positions=_pose_positions))
ROPE_SCALINGS.register("pose_yarn")(RopeScaling(_compute_yarn, _at_least_one("pose_yarn"),
                                                evaluates=False, finetune_at_train_len=True,
                                                training_positions=_pose_positions))


def scaled_frequencies(scaling: "str | RopeScaling", head_dim: int, base: float, factor: float, original_length: int,
                       length: int) -> tuple[torch.Tensor, float]:
    """(inverse frequencies, factor on the logits) of ``scaling`` at ``factor`` for windows of ``length``:
    a registered type's name, or a ``RopeScaling`` itself (a type at settings of its own, e.g. YaRN at
    other betas: the ``tuned`` rows, posbench/evaluation/variants/tuned.py)."""
    kind = scaling if isinstance(scaling, RopeScaling) else ROPE_SCALINGS.get(scaling)
    kind.validate(factor)
    return kind.compute(head_dim, base, factor, original_length, length)


def evaluable_scalings() -> list[str]:
    """The RoPE scalings an evaluation row can ask for (PoSE's are training recipes only)."""
    return [n for n in ROPE_SCALINGS.names() if ROPE_SCALINGS.get(n).evaluates]


def extend_methods() -> list[str]:
    """``none`` (plain continuation, any encoding) and every RoPE scaling that can be fine-tuned
    with (the registry's: posbench/attention/rope_scalings.py)."""
    return ["none", *(n for n in ROPE_SCALINGS.names() if ROPE_SCALINGS.get(n).extends)]
