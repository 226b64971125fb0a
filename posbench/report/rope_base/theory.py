"""Two published theories of where a RoPE model's length extrapolation breaks, as pure functions.

RoPE rotates pair ``n`` (``n = 0 .. d/2 - 1``) of a ``d``-dimensional query/key head by the angle
``m * theta_n`` with ``theta_n = base ** (-2n/d)``; everything below is a function of the head dimension
``d``, the base and a length. Nothing here touches a model: numpy and math only.

1. Liu et al. 2023, "Scaling Laws of RoPE-based Extrapolation" (ICLR 2024), arXiv 2310.05209,
   https://arxiv.org/abs/2310.05209. Authors' repository: https://github.com/OpenLMLab/scaling-rope
   (it holds only a README; no code was ever released there). The formulas were read from that README
   at commit b156a8b (2023-10-16), which tags them Eq. 12, 13, 16a-16d (Lemma 1 and Theorem 3, in
   Chinese); the later README commits keep the same formulas inside an HTML comment. The arXiv PDF itself
   could not be read from here, so those equation numbers are the README's and were not checked against
   a particular arXiv version. -> ``liu_critical_dimension``, ``liu_extrapolation_limit``,
   ``liu_critical_base``, ``liu_small_base_thresholds``.

2. Men et al. 2024, "Base of RoPE Bounds Context Length" (NeurIPS 2024), arXiv 2405.14591,
   https://arxiv.org/abs/2405.14591. Read from a full-text copy of the paper (Theorem 1 / Eq. 9,
   Eq. 10, Eq. 11, Table 2, Appendix A). No reference code was found. -> ``men_b``,
   ``men_supported_length``, ``men_base_lower_bound``.

Every function raises ``ValueError`` with a one-line message for a bad head dimension (odd or < 2), a
base <= 1 or a length < 1.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "liu_critical_dimension",
    "liu_extrapolation_limit",
    "liu_critical_base",
    "liu_small_base_thresholds",
    "men_b",
    "men_supported_length",
    "men_base_lower_bound",
    "DEFAULT_MAX_LEN",
]

#: Default horizon for ``men_supported_length``: 2**20 relative distances (Table 2 of Men et al. stops at 1M).
DEFAULT_MAX_LEN = 1 << 20

_TWO_PI = 2.0 * math.pi


# ---------------------------------------------------------------------------------------------- validation


def head_dim_of(config) -> int:
    """The d of both theories: a run's per-head width, d_model / n_heads of its config's model."""
    return int(config.model.d_model) // int(config.model.n_heads)


def _check_d_head(d_head: object) -> int:
    if isinstance(d_head, bool) or not isinstance(d_head, Integral) or d_head < 2 or d_head % 2:
        raise ValueError(f"d_head={d_head!r} is invalid: RoPE needs an even integer head dimension >= 2")
    return int(d_head)


def _check_base(base: object, name: str = "base") -> float:
    if isinstance(base, bool) or not isinstance(base, Real) or not math.isfinite(float(base)) or base <= 1:
        raise ValueError(f"{name}={base!r} is invalid: a RoPE base must be a finite number > 1")
    return float(base)


def _check_len(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name}={value!r} is invalid: it must be an integer number of tokens >= 1")
    return int(value)


def _thetas(d_head: int, base: float) -> np.ndarray:
    """theta_n = base ** (-2n/d), n = 0 .. d/2 - 1 (the RoPE frequencies, radians per token)."""
    return base ** (-2.0 * np.arange(d_head // 2, dtype=np.float64) / d_head)


# ---------------------------------------------------------------------------------------------- Liu et al.


def liu_critical_dimension(d_head: int, base: float, train_len: int) -> int:
    """Liu et al.'s critical dimension for extrapolation, d_extra (Lemma 1, Eq. 12-13 of the authors' README).

    Source: Liu, Yan, Zhang, An, Qiu, Lin, "Scaling Laws of RoPE-based Extrapolation", arXiv 2310.05209;
    formulas as written in https://github.com/OpenLMLab/scaling-rope README.md (commit b156a8b).

    Pair ``n`` has period ``T_n = 2*pi / theta_n = 2*pi * base**(2n/d)`` (Eq. 12). The first ``d_extra``
    dimensions (``d_extra / 2`` pairs) have ``T_n <= T_train``: they see a full period during training.
    The remaining ``d - d_extra`` see only part of one period and are, per the paper, the origin of the
    extrapolation failure. Eq. 13::

        d_extra = 2 * ceil( (d/2) * log_base( T_train / (2*pi) ) )

    Worked number from the README: LLaMA2, d=128, base=10000, T_train=4096 -> d_extra = 92 ("the first
    92 dimensions perceive complete position information, the last 36 are the root of the extrapolation
    problem").

    The paper writes Eq. 13 with the pre-training base 10000; here ``base`` is whatever base the
    dimensions were trained with (for a model trained from scratch, its own base; this is the paper's
    Eq. 16c, ``d'_extra``, with ``T_tune = T_train``).

    Deviations / edge cases (none of these arise for LLaMA2's numbers):

    - The result is clipped to ``[0, d]``: the raw formula exceeds ``d`` once every pair completes a period
      (small bases) and goes to 0 or below when ``T_train < 2*pi`` (no pair completes a period). The
      paper does not discuss either end.
    - When ``(d/2) * log_base(T_train / 2pi)`` is an exact integer k, the pair n = k has period exactly
      T_train and Eq. 12's "<=" counts it, but Eq. 13's ceiling does not; we follow Eq. 13 as written.
      A relative tolerance of 1e-12 absorbs float round-off in that product.
    """
    d = _check_d_head(d_head)
    b = _check_base(base)
    t = _check_len(train_len, "train_len")
    x = (d / 2.0) * math.log(t / _TWO_PI) / math.log(b)
    k = math.ceil(x - 1e-12 * max(1.0, abs(x)))
    return int(min(max(2 * k, 0), d))


def liu_critical_base(train_len: int, tune_len: int, pretrain_base: float = 10000.0) -> float:
    """Liu et al.'s critical base beta_0 (Theorem 3, Eq. 16a of the authors' README).

    ``beta_0 = pretrain_base ** log_{T_train/2pi}(T_tune/2pi)``, for a model pre-trained with
    ``pretrain_base`` on ``T_train`` tokens and fine-tuned on ``T_tune >= T_train`` tokens. Above beta_0
    the extrapolation limit is Eq. 16b; at or below it, the limit is the tuning length (Eq. 16c). With
    ``T_tune == T_train`` beta_0 equals the pre-training base. Requires ``train_len > 2*pi`` (7 tokens or
    more), else the logarithm's base is <= 1.
    """
    t = _check_len(train_len, "train_len")
    u = _check_len(tune_len, "tune_len")
    b0 = _check_base(pretrain_base, "pretrain_base")
    if t <= _TWO_PI:
        raise ValueError(f"train_len={t} is invalid here: beta_0 needs train_len > 2*pi, i.e. >= 7 tokens")
    if u < t:
        raise ValueError(f"tune_len={u} is invalid: Liu et al.'s Theorem 3 needs tune_len >= train_len={t}")
    return b0 ** (math.log(u / _TWO_PI) / math.log(t / _TWO_PI))


def liu_small_base_thresholds(tune_len: int) -> tuple[float, float, float]:
    """Liu et al.'s small-base thresholds (beta_1, beta_2, beta_3) (Eq. 16d of the authors' README).

    ``beta_1 = 2*T_tune/pi``, ``beta_2 = T_tune/pi``, ``beta_3 = T_tune/(2*pi)``. The README states that
    when the base is smaller than these, extrapolation improves markedly. Reading (ours, from the
    arithmetic, not a quoted statement): the lowest-frequency pair has theta ~ 1/base, so over T_tune
    tokens its angle reaches ~T_tune/base = pi/2, pi, 2*pi at beta_1, beta_2, beta_3: cos over a quarter,
    a half and a full period.
    """
    u = _check_len(tune_len, "tune_len")
    return (2.0 * u / math.pi, u / math.pi, u / _TWO_PI)


def liu_extrapolation_limit(
    d_head: int, base: float, train_len: int, *, pretrain_base: float | None = None
) -> float:
    """Liu et al.'s extrapolation upper bound T_extra in tokens (Theorem 3, Eq. 16b-16c of the README).

    Source: arXiv 2310.05209; formulas from https://github.com/OpenLMLab/scaling-rope README.md
    (commit b156a8b). For a model pre-trained with base 10000 on T_train tokens and fine-tuned with base
    beta on ``T_tune`` tokens, Eq. 16b (beta > beta_0)::

        T_extra = 2*pi * beta ** (d_extra / d),  d_extra = liu_critical_dimension(d, 10000, T_train)

    and for beta <= beta_0 (Eq. 16c) the bound is T_tune, with the critical dimension updated to
    ``d'_extra = 2*ceil((d/2) log_beta(T_tune/2pi)) >= d_extra``; even then a small enough beta
    extrapolates beyond T_tune, markedly so below beta_1, beta_2, beta_3 (``liu_small_base_thresholds``).
    For the small-base regime the README's observations (4K tuning) are that extrapolation has *no clear
    upper bound*: perplexity keeps rising past the training length, but more slowly the smaller the base.

    This function: ``T_tune == train_len`` throughout (posbench never fine-tunes on a longer length, so
    beta_0 == pretrain_base). Two modes:

    - ``pretrain_base=None`` (a model trained from scratch with ``base``, posbench's case): d_extra is
      computed with ``base`` itself and the result is ``2*pi * base ** (d_extra/d)``, i.e. the period of
      the first pair that did not complete a period in training (always >= train_len).
    - ``pretrain_base`` given (the paper's setting: pre-trained with it, fine-tuned at the same length
      with ``base``): ``base > pretrain_base`` -> Eq. 16b with d_extra from ``pretrain_base``;
      ``base < pretrain_base`` -> Eq. 16c, i.e. ``train_len``; ``base == pretrain_base`` -> the
      from-scratch value.

    In both modes the result is ``math.inf`` when every pair completes a full period within
    ``train_len`` under the base the model runs with (d_extra == d, roughly base <= beta_3 =
    T_train/2pi): no dimension is out of distribution, and the paper reports no clear upper bound there,
    only a slow perplexity rise.

    Deviations for toy models (listed so a reader can discount them):

    - The paper's theory is for fine-tuning a model pre-trained at base 10000; applying it to a model
      trained from scratch with base beta (the default mode) substitutes beta for 10000 in Eq. 13 and
      uses Eq. 16b at beta == beta_0, where the theorem as written puts beta_0 on the Eq. 16c side (bound
      = T_tune). We use 16b there because it is continuous with beta > beta_0 and is >= T_train.
    - Because of the ceiling in Eq. 13, T_extra is a sawtooth in the base, not monotone: for d=32,
      T_train=64 it is 83.8, 64.6, 111.7, 111.7, 83.8 tokens at bases 100, 500, 1e4, 1e5, 1e6. With
      only d/2 = 16 pairs each step of d_extra is coarse (a factor base**(2/d) in T_extra).
    - The theory speaks of perplexity-type extrapolation of a language model; posbench's tasks and
      model sizes are far from LLaMA2's, so the numbers are the theory's prediction, nothing more.
    - Worked check (ours, not a number quoted from the paper): LLaMA2, d=128, T_train=4096, pre-trained
      at 10000 and tuned with base 1e6: 2*pi * 1e6**(92/128) = 2*pi * 10**4.3125 ~= 129,000 tokens, in line
      with the README's statement that base 1e6 with 4K tuning handles 100K+ contexts.
    """
    d = _check_d_head(d_head)
    b = _check_base(base)
    t = _check_len(train_len, "train_len")
    pb = b if pretrain_base is None else _check_base(pretrain_base, "pretrain_base")
    if liu_critical_dimension(d, b, t) == d:
        return math.inf
    if b < pb:
        return float(t)
    d_extra = liu_critical_dimension(d, pb, t)
    return _TWO_PI * b ** (d_extra / d)


# ---------------------------------------------------------------------------------------------- Men et al.


def men_b(d_head: int, base: float, m: int | np.ndarray) -> float | np.ndarray:
    """Men et al.'s B_{m,theta} = sum_{i=0}^{d/2-1} cos(m * theta_i), theta_i = base**(-2i/d) (Theorem 1, Eq. 9).

    Source: Men, Xu, Wang, Zhang, Lin, Han, Chen, "Base of RoPE Bounds Context Length", arXiv 2405.14591.
    Theorem 1: if query and key components are i.i.d. with standard deviation sigma and a "similar" key is
    k* = q + eps (eps zero-mean), then (E[q^T R_m k*] - E[q^T R_m k]) / (2 sigma^2) = B_{m,theta}: the
    margin by which a similar token out-scores a random one at relative distance m. ``m`` may be an integer
    or an array of relative distances (>= 0); returns a float or an array of the same shape.
    """
    d = _check_d_head(d_head)
    b = _check_base(base)
    mm = np.asarray(m, dtype=np.float64)
    out = np.cos(mm[..., None] * _thetas(d, b)).sum(axis=-1)
    return float(out) if out.ndim == 0 else out


def _first_negative(d: int, base: float, limit: int) -> int | None:
    """Smallest m in 1..limit with B_{m,theta} < 0, or None. Chunked so an early violation is cheap."""
    th = _thetas(d, base)
    start, chunk = 1, 256
    while start <= limit:
        stop = min(limit, start + chunk - 1)
        m = np.arange(start, stop + 1, dtype=np.float64)
        bad = np.flatnonzero(np.cos(np.outer(m, th)).sum(axis=1) < 0.0)
        if bad.size:
            return start + int(bad[0])
        start, chunk = stop + 1, min(chunk * 2, 1 << 15)
    return None


def _any_negative(d: int, base: float, limit: int, hints: list[int]) -> int | None:
    """Some m in 1..limit with B_{m,theta} < 0, or None; tries a window around earlier violations first.

    B is continuous in the base, so a violation found at one base is usually still (or nearly) one at the
    next grid point: checking those few distances first settles most infeasible bases at once. The
    answer (violated or not) is the same as ``_first_negative``'s; only the m returned may differ.
    """
    if hints:
        th = _thetas(d, base)
        m = np.unique(np.clip(np.add.outer(np.asarray(hints), np.arange(-16, 17)).ravel(), 1, limit))
        bad = np.flatnonzero(np.cos(np.outer(m.astype(np.float64), th)).sum(axis=1) < 0.0)
        if bad.size:
            return int(m[bad[0]])
    return _first_negative(d, base, limit)


def men_supported_length(d_head: int, base: float, max_len: int = DEFAULT_MAX_LEN) -> int:
    """Men et al.'s context length L_theta that a base truly supports (Eq. 10), capped at ``max_len``.

    Source: arXiv 2405.14591, Section 4.3, Eq. 10::

        L_theta = sup{ L | B_{m,theta} >= 0 for all m in [0, 1, ..., L] }

    i.e. one less than the first relative distance at which a random token out-scores a similar one
    (Desiderata 2 fails). Evaluated directly over every integer m from 1 to ``max_len`` (B_0 = d/2 > 0).
    Returns ``max_len`` when no violation is found up to it; the true L_theta may then be larger.

    The paper notes the bound is not strict: stacked layers can reach past one layer's range, which would
    raise L_theta (Section 4.3, "Note"); and Theorem 1 assumes i.i.d. query/key components with equal
    variance (Appendix A, Eq. 13 gives the per-pair-weighted form when the variances differ, which this
    function does not model). Superficial long-context capability (Sections 3 and 5.4): with a base below
    the bound a model can keep a low perplexity at long lengths, because it falls back on nearby tokens,
    while it fails to retrieve information from far away.

    Deviation for toy models: the per-head criterion is applied as is; a model with few layers and tiny
    heads (d_head 32 here, against 128 in the paper's models) gives no more guarantee that the bound is
    tight. Cost is O(max_len * d/2) cosines in the worst case (no violation).
    """
    d = _check_d_head(d_head)
    b = _check_base(base)
    cap = _check_len(max_len, "max_len")
    first = _first_negative(d, b, cap)
    return cap if first is None else first - 1


def men_base_lower_bound(
    d_head: int, context_len: int, *, rel_step: float = 1e-3, base_max: float = 1e12
) -> float:
    """Men et al.'s lower bound of the RoPE base for a context length L (Eq. 11), found numerically.

    Source: arXiv 2405.14591, Section 4.3, Eq. 11::

        base_L = inf{ base | B_{m,theta} >= 0 for all m in [0, 1, ..., L] },  theta_i = base**(-2i/d)

    The paper says Eq. 11 has no closed form and reports a numerical solution (Table 2, d not stated;
    the models it studies have d_head = 128):

        L:     1k     2k     4k     8k     16k    32k    64k    128k   256k   512k   1M
        base: 4.3e3  1.6e4  2.7e4  8.4e4  3.1e5  6.4e5  2.1e6  7.8e6  3.6e7  6.4e7  5.1e8

    Method and monotonicity caveat: the feasible set of bases is NOT an interval. Just above the
    infimum it is a union of narrow windows (for d=128, L=2000: feasible in [1.159e4, 1.165e4), then
    infeasible until 1.242e4, ...), so a plain bisection on log(base) between an infeasible low base and
    a feasible high one converges to an arbitrary window edge (for L=1000 it returns 5.6e3, not 4.2e3).
    We therefore scan log(base) upwards from base -> 1 in steps of ``log(1 + rel_step)``, stop at the
    first feasible grid point, and bisect on log(base) only inside that last step (assuming a single
    feasible edge there). A feasible window narrower than one step can be stepped over, so the answer is
    the infimum up to that resolution (with ``rel_step=0.004`` the 4k window at 2.70e4 is missed and the
    answer is 2.86e4).

    Reading "k" as 1024, d=128 and this method give 1k -> 4.29e3, 4k -> 2.70e4, 8k -> 8.38e4: the
    published 4.3e3, 2.7e4, 8.4e4 to the two figures printed (with k = 1000, 1k gives 4.21e3 -> 4.2e3).
    Not reproduced: 2k -> published 1.6e4, Eq. 11 gives 1.16e4 (L=2000 and 2048; 1.6e4 is feasible, but
    so is 1.16e4); 16k -> published 3.1e5, we get 2.34e5; 32k -> published 6.4e5, we get 6.30e5 (L=16384,
    32768). The paper does not state its d, its grid or whether k means 1000 or 1024, so these gaps are
    reported, not resolved. 64k and beyond were not computed here (too slow for this machine).
    Returns ``math.inf`` if no base up to ``base_max`` is feasible.

    The paper states (Section 4.3, Figure 1) that the required base grows with the context length; on
    the grid it fits y = 0.0424 * x**1.628. Since feasibility for L' >= L implies feasibility for L, the
    infimum is non-decreasing in L exactly; the numerical answer is so up to the scan resolution.

    Cost: each grid point evaluates B up to the first violation, so bases far below the bound are cheap;
    the expensive ones are those within a factor ~2 below it (~700 points at 0.1%, each up to L*d/2
    cosines) and is cut short by re-testing distances that violated at earlier grid points: about 2 s
    for d=128, L=8192, 5 s for 16384, 12 s for 32768 on this machine.
    """
    d = _check_d_head(d_head)
    L = _check_len(context_len, "context_len")
    if not (isinstance(rel_step, Real) and 0 < rel_step < 1):
        raise ValueError(f"rel_step={rel_step!r} is invalid: it must be a number in (0, 1)")
    b_max = _check_base(base_max, "base_max")

    hints: list[int] = []

    def feasible(log_b: float) -> bool:
        m = _any_negative(d, math.exp(log_b), L, hints)
        if m is None:
            return True
        if m not in hints:
            hints.append(m)
            del hints[:-8]
        return False

    step = math.log1p(float(rel_step))
    lo = 0.0  # log(1): base 1 itself is excluded (base > 1), it only anchors the scan
    hi = step
    log_max = math.log(b_max)
    while not feasible(hi):
        lo = hi
        hi += step
        if hi > log_max:
            return math.inf
    for _ in range(60):  # bisection inside the last step, to ~1e-12 relative
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
        mid = 0.5 * (lo + hi)
        if feasible(mid):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)
