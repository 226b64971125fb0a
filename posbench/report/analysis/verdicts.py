"""The verdict classes of a ratio to 1x (flat / mild / broken / undecided) and of a row's use of
context past train_len (uses far context / local / undecided), with their thresholds: one place
that every table, summary and budget section reads."""

from __future__ import annotations

import pandas as pd

MILD_LIMIT = 1.3  # ratio to 1x: flat <= 1 + tolerance < mild <= 1.3 < broken (the README's classes)


def verdict(ratio: float, tolerance: float) -> str:
    """flat (within ``tolerance`` of 1x, or better), mild (up to 1.3x its 1x perplexity), broken (more)."""
    if pd.isna(ratio):
        return "n/a"
    return "flat" if ratio <= 1 + tolerance else "mild" if ratio <= MILD_LIMIT else "broken"


UNDECIDED = "undecided"

# far-context gain (the longest length's perplexity with a window of train_len keys over without it):
# a row "uses far context" when its whole interval lies above 1 + FAR_MARGIN (the keys past
# train_len lower its perplexity by more than 1%), and is "local" when its whole interval lies below
# (they gain it less than 1%, or cost it); else undecided. 1% is a fifth of the flat class's tolerance.
FAR_MARGIN = 0.01
USES_FAR = "uses far context"
LOCAL = "local"
FAR_UNDECIDED = "far-context use undecided"


def far_context_class(lo: float, hi: float) -> str:
    if pd.isna(lo) or pd.isna(hi):
        return ""
    if lo > 1 + FAR_MARGIN:
        return USES_FAR
    if hi < 1 + FAR_MARGIN:
        return LOCAL
    return FAR_UNDECIDED


def qualified_verdict(verdict_word: str, far: str) -> str:
    """A flat verdict says whether the model reads past train_len: "flat, uses far context", "flat,
    local (gains nothing past train_len)"; other verdicts, and rows without a window control, as they are."""
    if str(verdict_word) != "flat" or not far or far.startswith("no "):
        return str(verdict_word) if pd.notna(verdict_word) else ""
    if far == LOCAL:
        return "flat, local (gains nothing past train_len)"
    return f"flat, {far}"


def interval_verdict(lo: float, hi: float, mean: float, tolerance: float) -> str:
    """The verdict a ratio's 95% interval [lo, hi] supports: flat (the whole interval within
    ``tolerance`` of 1x, or better), mild (inside (1 + tolerance, 1.3]), broken (above 1.3), else
    ``undecided`` (the interval straddles a border). Without an interval (one seed and no
    per-document losses), the mean's class."""
    if pd.isna(lo) or pd.isna(hi):
        return "n/a" if pd.isna(mean) else f"{verdict(mean, tolerance)}, no interval"
    flat_top = 1 + tolerance
    if hi <= flat_top:
        return "flat"
    if lo > flat_top and hi <= MILD_LIMIT:
        return "mild"
    if lo > MILD_LIMIT:
        return "broken"
    return UNDECIDED
