"""The report's significance level and how it writes p-values. The intervals and tests themselves
are in posbench/report/analysis/bootstrap.py (Student's t over seeds with the text's variance, the paired
bootstrap over documents within one model's rows)."""

from __future__ import annotations

ALPHA = 0.05  # two-sided significance level of the paired test and the 95% intervals


def format_p(p: float, digits: int = 2) -> str:
    """A p-value as the report writes it: ``< 0.001`` below 0.001 (the normal tail of the bootstrap
    replicates goes far below what the data could show: report/analysis/bootstrap.py bootstrap_p), else
    ``digits`` significant digits; empty for NaN."""
    if p != p:
        return ""
    return "< 0.001" if p < 0.001 else f"{p:.{digits}g}"


def p_phrase(p: float, digits: int = 2) -> str:
    """``= 0.042`` or ``< 0.001`` (format_p), for a sentence: "Holm-adjusted p {p_phrase(p)}"."""
    text = format_p(p, digits)
    return text if text.startswith("<") else f"= {text}"
