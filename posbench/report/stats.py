"""Statistics over seeds: mean, standard deviation and a 95% t-interval per cell, and a paired
t-test between two encodings trained with the same seeds.

Perplexities are compared on the log scale (mean loss): seeds move perplexity multiplicatively,
and the difference of log perplexities is the log of their ratio.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

ALPHA = 0.05  # two-sided significance level of the paired test and the 95% intervals


def ci95_halfwidth(values) -> float:
    """Half-width of the 95% t-interval of the mean; NaN with fewer than two values."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) < 2:
        return math.nan
    return float(stats.t.ppf(1 - ALPHA / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))


def format_p(p: float, digits: int = 2) -> str:
    """A p-value as the report writes it: ``< 0.001`` below 0.001 (the normal tail of the bootstrap
    replicates goes far below what the data could show: report/bootstrap.py bootstrap_p), else
    ``digits`` significant digits; empty for NaN."""
    if p != p:
        return ""
    return "< 0.001" if p < 0.001 else f"{p:.{digits}g}"


def p_phrase(p: float, digits: int = 2) -> str:
    """``= 0.042`` or ``< 0.001`` (format_p), for a sentence: "Holm-adjusted p {p_phrase(p)}"."""
    text = format_p(p, digits)
    return text if text.startswith("<") else f"= {text}"


def paired_pvalue(a, b) -> float:
    """Two-sided paired t-test of log(a) against log(b), pairs aligned by seed; NaN with fewer
    than two pairs. Identical pairs (zero spread of the differences) give p = 1 when the mean
    difference is 0 and p = 0 otherwise."""
    a, b = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if len(a) < 2:
        return math.nan
    d = a - b
    if np.allclose(d, d[0], rtol=0, atol=1e-12):
        return 1.0 if abs(d[0]) < 1e-12 else 0.0
    return float(stats.ttest_rel(a, b).pvalue)
