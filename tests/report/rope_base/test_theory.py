"""Tests for posbench.report.rope_base.theory: published numbers, hand-worked toy values, the monotone
behaviour the papers state, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from posbench.report.rope_base.theory import (
    liu_critical_base,
    liu_critical_dimension,
    liu_extrapolation_limit,
    liu_small_base_thresholds,
    men_b,
    men_base_lower_bound,
    men_supported_length,
)

TWO_PI = 2.0 * math.pi


def _sig2(x: float) -> float:
    """x rounded to two significant figures, the precision of Men et al.'s Table 2."""
    return float(f"{x:.1e}")


def _brute_supported(d: int, base: float, cap: int) -> int:
    """Independent Eq. 10: the full matrix of cos(m * theta_i), no chunking, no early exit."""
    m = np.arange(cap + 1, dtype=np.float64)
    theta = base ** (-2.0 * np.arange(d // 2) / d)
    b = np.cos(np.outer(m, theta)).sum(axis=1)
    neg = np.flatnonzero(b < 0)
    return cap if neg.size == 0 else int(neg[0]) - 1


# ------------------------------------------------------------------------------------ Liu et al., published


def test_liu_llama2_critical_dimension_is_92():
    # Published (OpenLMLab/scaling-rope README, Lemma 1): LLaMA2, d=128, base 10000, T_train=4096 -> 92.
    # By hand: (128/2) * ln(4096/2pi) / ln(1e4) = 64 * 6.47984 / 9.21034 = 64 * 0.70354 = 45.03 -> ceil 46 -> 92.
    assert liu_critical_dimension(128, 10000, 4096) == 92


def test_liu_llama2_extrapolation_limits():
    # Worked by hand (not printed in the README): Eq. 16b with d_extra = 92.
    # Pre-trained at 1e4, tuned at 4096 with base 1e6: 2pi * 1e6**(92/128) = 2pi * 10**4.3125
    #   = 6.283185 * 20535.25 = 129,026.8 tokens.
    assert liu_extrapolation_limit(128, 1e6, 4096, pretrain_base=10000) == pytest.approx(129026.8, rel=1e-5)
    # Base 10000 itself (beta == beta_0, the from-scratch reading): 2pi * 10**(4*92/128) = 2pi * 10**2.875
    #   = 6.283185 * 749.894 = 4711.7 tokens.
    assert liu_extrapolation_limit(128, 10000, 4096) == pytest.approx(4711.72, rel=1e-5)
    # Base below the pre-training base, at the same length: Eq. 16c, the bound is T_tune = 4096 ...
    assert liu_extrapolation_limit(128, 5000, 4096, pretrain_base=10000) == 4096.0
    # ... unless every pair completes a period within 4096 tokens (base 500: d'_extra would be
    # 2*ceil(64 * 6.47984 / 6.21461) = 2*ceil(66.73) = 134 > 128): no clear bound in the paper -> inf.
    assert liu_extrapolation_limit(128, 500, 4096, pretrain_base=10000) == math.inf


def test_liu_critical_base_and_small_base_thresholds():
    # Eq. 16a: beta_0 = 1e4 ** (ln(16384/2pi) / ln(4096/2pi)) = 1e4 ** (7.86613 / 6.47984) = 1e4 ** 1.21394
    #   = 10 ** 4.85576 = 71,751 (by hand; beta_0 for tuning LLaMA2 at 16K).
    assert liu_critical_base(4096, 16384) == pytest.approx(1e4 ** (math.log(16384 / TWO_PI) / math.log(4096 / TWO_PI)))
    assert liu_critical_base(4096, 16384) == pytest.approx(71751, rel=1e-3)
    assert liu_critical_base(4096, 4096) == pytest.approx(10000.0)
    # Eq. 16d at T_tune=4096: 2*4096/pi = 2607.6, 4096/pi = 1303.8, 4096/2pi = 651.9.
    # (The README's "base from 2608 down to 652" speeds up extrapolation gains: the same two numbers.)
    b1, b2, b3 = liu_small_base_thresholds(4096)
    assert (round(b1), round(b2), round(b3)) == (2608, 1304, 652)


# ------------------------------------------------------------------------------------ Liu et al., toy model

# d_head=32, T_train=64: x = (32/2) * ln(64/2pi) / ln(base), ln(64/2pi) = ln(10.18592) = 2.320995.
#   base 100: 16 * 2.320995 / 4.605170 = 8.064  -> ceil 9 -> d_extra 18; T = 2pi * 100**(18/32) = 2pi * 10**1.125 = 83.788
#   base 500: 16 * 2.320995 / 6.214608 = 5.976  -> ceil 6 -> d_extra 12; T = 2pi * 500**0.375 = 2pi * 10.2830 = 64.609
#   base 1e4: 16 * 2.320995 / 9.210340 = 4.032  -> ceil 5 -> d_extra 10; T = 2pi * 10**(4*10/32) = 2pi * 17.7828 = 111.733
#   base 1e5: 16 * 2.320995 / 11.512925 = 3.226 -> ceil 4 -> d_extra 8;  T = 2pi * 10**(5*8/32) = 2pi * 17.7828 = 111.733
#   base 1e6: 16 * 2.320995 / 13.815511 = 2.688 -> ceil 3 -> d_extra 6;  T = 2pi * 10**(6*6/32) = 2pi * 13.3352 = 83.788
TOY_LIU = [(100, 18, 83.788), (500, 12, 64.609), (1e4, 10, 111.733), (1e5, 8, 111.733), (1e6, 6, 83.788)]


@pytest.mark.parametrize(("base", "d_extra", "t_extra"), TOY_LIU)
def test_liu_toy_by_hand(base, d_extra, t_extra):
    assert liu_critical_dimension(32, base, 64) == d_extra
    assert liu_extrapolation_limit(32, base, 64) == pytest.approx(t_extra, rel=1e-4)


def test_liu_toy_small_base_has_no_bound():
    # base 10: 16 * 2.320995 / 2.302585 = 16.13 -> ceil 17 -> 34, clipped to d = 32: every pair completes
    # a period within 64 tokens (the slowest, n=15, has period 2pi * 10**(30/32) = 54.4 <= 64) -> inf.
    assert liu_critical_dimension(32, 10, 64) == 32
    assert liu_extrapolation_limit(32, 10, 64) == math.inf
    # T_train < 2pi: no pair completes a period (the fastest has period 2pi = 6.28 > 6) -> 0.
    assert liu_critical_dimension(32, 100, 6) == 0


def test_liu_monotone_in_base_and_length():
    bases = [20, 100, 500, 1e3, 1e4, 1e5, 1e6, 1e7]
    dims = [liu_critical_dimension(32, b, 64) for b in bases]
    assert dims == sorted(dims, reverse=True)  # a larger base covers fewer dimensions
    lengths = [8, 16, 64, 256, 1024, 4096]
    dims = [liu_critical_dimension(128, 1e4, t) for t in lengths]
    assert dims == sorted(dims)  # a longer training length covers more
    # Theorem 3: above beta_0 the bound grows with the base (d_extra fixed by pre-training).
    limits = [liu_extrapolation_limit(128, b, 4096, pretrain_base=1e4) for b in (2e4, 1e5, 5e5, 1e6)]
    assert limits == sorted(limits) and len(set(limits)) == 4
    # The from-scratch limit is never below the training length (ceil in Eq. 13).
    for b in bases:
        assert liu_extrapolation_limit(32, b, 64) >= 64


# ------------------------------------------------------------------------------------ Men et al.


def test_men_b_matches_definition():
    # Eq. 9 at m=0 is d/2; d=4, base=100: theta = [1, 0.1], B_3 = cos 3 + cos 0.3 = -0.989992 + 0.955336 = -0.034656.
    assert men_b(32, 1e4, 0) == pytest.approx(16.0)
    assert men_b(4, 100, 3) == pytest.approx(-0.034656, abs=1e-6)
    assert men_b(4, 100, np.array([0, 3])).shape == (2,)


def test_men_supported_length_by_hand():
    # d=2: theta_0 = 1 for every base, B_m = cos m; cos 1 = 0.540 > 0, cos 2 = -0.416 < 0 -> L = 1.
    assert men_supported_length(2, 100) == 1
    # d=4, base=100: theta = [1, 0.1]; B_1 = 0.5403 + 0.9950 > 0, B_2 = -0.4161 + 0.9801 = 0.564 > 0,
    # B_3 = -0.9900 + 0.9553 = -0.035 < 0 -> L = 2.
    assert men_supported_length(4, 100) == 2
    # d=4, base=1e4: theta = [1, 0.01]; closest calls B_3 = -0.9900 + 0.9996 = 0.0096 and
    # B_16 = -0.9577 + 0.9872 = 0.0296 stay >= 0; first negative B_22 = -1.0000 + 0.9759 = -0.024 -> L = 21.
    assert men_supported_length(4, 1e4) == 21
    # capped: nothing negative within the horizon returns the horizon
    assert men_supported_length(4, 1e4, max_len=10) == 10


# Toy model d_head=32: values computed by this module and checked against an independent full-matrix
# evaluation of Eq. 10 (not by hand: 16 cosines per distance over thousands of distances).
TOY_MEN = [(100, 27), (500, 102), (1e4, 473), (1e5, 1282), (1e6, 3477)]


@pytest.mark.parametrize(("base", "length"), TOY_MEN)
def test_men_toy_supported_length(base, length):
    assert men_supported_length(32, base, max_len=8192) == length
    assert _brute_supported(32, base, 8192) == length


def test_men_toy_lower_bound_for_train_len_64():
    # base_64 for d=32 is ~314.7: bases 100 (L_theta = 27) fall short, 500 (L_theta = 102) suffices.
    b = men_base_lower_bound(32, 64)
    assert b == pytest.approx(314.7, rel=2e-3)
    assert _brute_supported(32, b * (1 + 1e-9), 64) == 64
    assert _brute_supported(32, b * (1 - 1e-3), 64) < 64


@pytest.mark.parametrize(
    ("context_len", "published"),
    [(1024, 4.3e3), (4096, 2.7e4), (8192, 8.4e4)],
)
def test_men_published_table2(context_len, published):
    # Men et al. Table 2 (d not stated; 128 as in Llama2/Baichuan2), printed to two significant figures.
    # With L = 1024 * k: 1k -> 4293, 4k -> 26950, 8k -> 83760.
    assert _sig2(men_base_lower_bound(128, context_len)) == published


def test_men_published_2k_is_not_reproduced():
    # Table 2 prints 1.6e4 for 2k. Eq. 11 evaluated directly gives 1.159e4 (for L=2000 and 2048):
    # 1.159e4 is feasible (no negative B up to 2048), so the infimum cannot be 1.6e4. 1.6e4 is feasible too.
    b = men_base_lower_bound(128, 2048)
    assert b == pytest.approx(1.159e4, rel=2e-3)
    assert _brute_supported(128, b * (1 + 1e-9), 2048) == 2048
    assert _brute_supported(128, 1.6e4, 2048) == 2048


def test_men_feasible_set_is_not_an_interval():
    # The monotonicity caveat: for d=128, L=2000 the base 1.16e4 is feasible, 1.2e4 is not, 1.6e4 is.
    assert _brute_supported(128, 1.16e4, 2000) == 2000
    assert _brute_supported(128, 1.2e4, 2000) < 2000
    assert _brute_supported(128, 1.6e4, 2000) == 2000


def test_men_bound_grows_with_context_length():
    # Section 4.3 / Figure 1: the required base increases with the context length.
    bounds = [men_base_lower_bound(32, n) for n in (8, 16, 32, 64, 128)]
    assert bounds == sorted(bounds)
    assert bounds[-1] > 3 * bounds[0]


def test_men_no_feasible_base():
    # d=2: B_m = cos m, and cos 2 < 0 whatever the base -> no base supports L = 2.
    assert men_base_lower_bound(2, 2, base_max=1e3) == math.inf
    # ... while L = 1 holds for every base > 1 (cos theta > 0 for theta <= 1): the infimum is 1.
    assert men_base_lower_bound(2, 1) == pytest.approx(1.0, abs=1e-6)


# ------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: liu_critical_dimension(31, 1e4, 64), "d_head=31"),
        (lambda: liu_critical_dimension(0, 1e4, 64), "d_head=0"),
        (lambda: liu_critical_dimension(32, 1.0, 64), "base=1.0"),
        (lambda: liu_critical_dimension(32, 1e4, 0), "train_len=0"),
        (lambda: liu_extrapolation_limit(32, -5, 64), "base=-5"),
        (lambda: liu_extrapolation_limit(32, 1e4, 64, pretrain_base=0.5), "pretrain_base=0.5"),
        (lambda: liu_critical_base(4096, 2048), "tune_len=2048"),
        (lambda: men_b(3, 1e4, 1), "d_head=3"),
        (lambda: men_supported_length(32, 1e4, max_len=0), "max_len=0"),
        (lambda: men_supported_length(32, float("nan")), "base=nan"),
        (lambda: men_base_lower_bound(32, 0), "context_len=0"),
        (lambda: men_base_lower_bound(True, 64), "d_head=True"),
    ],
)
def test_bad_input_raises_one_line(call, needle):
    with pytest.raises(ValueError) as err:
        call()
    message = str(err.value)
    assert needle in message and "\n" not in message
