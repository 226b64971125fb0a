"""Key tokens: their statistics per row and multiple, and the loss-by-distance curves.

The rule that chooses them (Fang et al. 2024, LongPPL, scaled to bytes: ``KeyTokenRule``) and each
seed's counts from the runs' per-token losses are posbench/report/analysis/key_tokens.py's (the
side-by-side of the measures reads them too).

Statistics per row and multiple, over seeds and the scored documents (posbench/report/analysis/bootstrap.py:
the panel's document draws, ``Parts`` and its ``estimate``; one seed: text alone): the key-token
share (key tokens / tokens scored), the mirror share, the key-token perplexity of the full pass
(exp of the key tokens' mean loss: LongPPL with the row as its own evaluator) and of the window
pass, and the far-context gain on key tokens, their perplexity under the window over under the full
pass. Perplexities and gains are means of each seed's log value over the seeds with key tokens;
a share's interval (Student's t, which can reach below 0 for a rare share) is held in [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from posbench.report.analysis import bootstrap
from posbench.report.analysis.key_tokens import (RULES, NO_KEY_TOKENS, KeyCounts, KeyTokenRule, SeedKeyCounts, key_counts,
                                                 mirror, paired_rows, read_key_counts, select)
from posbench.report.analysis.tables import CELL_KEYS


@dataclass(frozen=True)
class KeyStats:
    """A row at one multiple: each statistic as (mean, lo, hi) with its 95% interval; ``seeds`` and
    ``seeds_with_keys``; ``key_tokens`` summed over seeds."""

    share: tuple
    mirror_share: tuple
    key_ppl: tuple
    key_ppl_window: tuple
    gain: tuple
    seeds: int
    seeds_with_keys: int
    key_tokens: int


def _parts(seeds, num: np.ndarray, den: np.ndarray, draws: bootstrap.Draws | None) -> bootstrap.Parts:
    """sum(num) / sum(den) per seed ([S, D] each) as bootstrap Parts: the value per seed, on each of
    the panel's document draws, and its per-document parts."""
    y = num.sum(1) / den.sum(1)
    reps = None
    if draws is not None:
        with np.errstate(invalid="ignore", divide="ignore"):  # a draw without a key token: NaN, no interval
            reps = (draws.doc_counts @ num.T) / (draws.doc_counts @ den.T)
    return bootstrap.Parts(tuple(seeds), y, reps, num.shape[1], bootstrap.Documents(num.mean(0), den.mean(0)))


def _exp(e: bootstrap.Estimate) -> tuple:
    return tuple(math.exp(v) if np.isfinite(v) else math.nan for v in (e.mean, e.lo, e.hi))


def _share(e: bootstrap.Estimate) -> tuple:
    """A share with its interval, held in [0, 1] (the t interval of a rare share reaches below 0)."""
    clip = lambda v: min(max(v, 0.0), 1.0) if np.isfinite(v) else v  # noqa: E731
    return e.mean, clip(e.lo), clip(e.hi)


NONE3 = (math.nan, math.nan, math.nan)


def key_stats(seeds, counts: list[KeyCounts], draws: bootstrap.Draws | None) -> KeyStats:
    """The statistics of one row at one multiple from each seed's ``KeyCounts`` (same documents)."""
    stack = lambda f, idx: np.stack([getattr(counts[i], f) for i in idx])  # noqa: E731
    every = list(range(len(counts)))
    share = _share(_parts(seeds, stack("key", every), stack("tokens", every), draws).estimate())
    mirror_share = _share(_parts(seeds, stack("mirror", every), stack("tokens", every), draws).estimate())
    keyed = [i for i in every if counts[i].key.sum() > 0]
    n_key = int(sum(counts[i].key.sum() for i in every))
    if not keyed:
        return KeyStats(share, mirror_share, NONE3, NONE3, NONE3, len(counts), 0, 0)
    s = [seeds[i] for i in keyed]
    key, full, window = stack("key", keyed), stack("key_full", keyed), stack("key_window", keyed)
    ppl = _exp(_parts(s, full, key, draws).estimate())
    ppl_window = _exp(_parts(s, window, key, draws).estimate())
    gain = _exp(_parts(s, window - full, key, draws).estimate())
    return KeyStats(share, mirror_share, ppl, ppl_window, gain, len(counts), len(keyed), n_key)


@dataclass
class KeyTokenFrames:
    """``table``: one row per (row with a window control, multiple above 1) whose runs kept both
    passes' per-token losses: the cell's keys (``CELL_KEYS``), ``multiple``, ``length``, ``seeds`` /
    ``seeds_with_keys``, ``key_tokens``, and ``share``, ``mirror_share``, ``key_ppl``, ``key_ppl_window``,
    ``gain`` each with ``_lo`` / ``_hi`` (``key_stats``); empty where no run kept them. ``curves``: per
    such row at its longest length with per-token losses, (length, mean loss by position under the
    full pass [L], under the window pass [L]) over every seed's scored tokens (NaN where none is scored)."""

    table: pd.DataFrame
    curves: dict


def key_token_frames(evals: pd.DataFrame, load: Callable[[str], dict[str, np.ndarray] | None],
                     token_sets: dict | None, rule: KeyTokenRule = KeyTokenRule(),
                     replicates: int = bootstrap.REPLICATES, read: SeedKeyCounts | None = None) -> KeyTokenFrames:
    """The key-token table and the window curves of the rows of ``evals`` that have a window control;
    ``load(run_id)``: that run's token_losses.npz (None: it kept none; analysis/key_tokens.py read_key_counts);
    ``read``: those counts already read (the report's ``ReportContext.key_counts``: the files are read once)."""
    read = read_key_counts(evals, load, token_sets, rule, replicates) if read is None else read
    counts, sums, panels = read.counts, read.sums, read.panels
    rows = []
    for (cell, multiple, length), per_seed in sorted(counts.items(), key=lambda kv: (tuple(map(str, kv[0][0])), kv[0][1])):
        per_seed.sort(key=lambda sc: sc[0])
        doc_tokens, draws = panels[cell]
        st = key_stats([sd for sd, _ in per_seed], [c for _, c in per_seed], draws if doc_tokens is not None else None)
        row = dict(zip(CELL_KEYS, cell), multiple=multiple, length=length, seeds=st.seeds,
                   seeds_with_keys=st.seeds_with_keys, key_tokens=st.key_tokens)
        for name in ("share", "mirror_share", "key_ppl", "key_ppl_window", "gain"):
            row[name], row[f"{name}_lo"], row[f"{name}_hi"] = getattr(st, name)
        rows.append(row)
    curves = {}
    for (cell, length), (full, window, n) in sorted(sums.items(), key=lambda kv: (tuple(map(str, kv[0][0])), kv[0][1])):
        with np.errstate(invalid="ignore", divide="ignore"):
            curves[cell] = (length, full / n, window / n)  # the longest length last: it stays
    return KeyTokenFrames(pd.DataFrame(rows), curves)


__all__ = ["RULES", "KeyTokenFrames", "KeyTokenRule", "KeyCounts", "KeyStats", "NO_KEY_TOKENS", "key_counts", "key_stats",
           "key_token_frames", "mirror", "paired_rows", "select"]
