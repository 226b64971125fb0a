"""Intervals over text and seeds: a two-level bootstrap of every number in the main table.

A perplexity in posbench depends on two random things: the seed the model was trained with, and
the text it is scored on. Intervals over seeds alone say nothing about the second (issue 23 moved
one checkpoint's 16x/1x from 1.80 to 2.15 by scoring another stretch of the same split), so each
replicate of the bootstrap

1. draws the seeds of a cell with replacement (a cell with one seed keeps it; the draws name seed
   ids, so two rows of a panel draw the same seeds; a seed a row lacks takes one of its own), then
2. for each drawn seed, draws the validation documents of the token set with replacement, and
   recomputes each perplexity from the drawn documents' summed losses and token counts
   (``doc_nats`` of every record; ``doc_tokens`` of its token set: posbench/evaluate.py).

The draws are shared by every row of a panel (protocol, model, train_len) and every length, so
the replicates of two rows (or two lengths of one row) are paired: a ratio's interval and a
comparison with the best row see the same text and the same seed positions. Each statistic is
its observed value (mean over seeds) with the 2.5 and 97.5 percentiles of its replicates.

Comparisons (``<m>x_p_vs_best``): each row against the lowest mean of its column in the same
panel, the pre-declared family; the two-sided bootstrap p-value of the difference of mean
log-perplexities ``2 min(P*(d <= 0), P*(d >= 0))`` (with the +1 of Davison and Hinkley; beyond
the resolution of the replicates, the normal tail: ``bootstrap_p``), then Holm's correction over
every comparison of the panel (all rows x all multiples).

Records without ``doc_nats`` (made before scored documents were recorded) fall back to seeds
alone: a t-interval and a paired t-test, and the table says which (``interval`` column).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from posbench.report.stats import ALPHA, ci95_halfwidth, paired_pvalue

REPLICATES = 2000
RNG_SEED = 20231  # fixed: a report is reproducible from its runs
LO, HI = 100 * ALPHA / 2, 100 * (1 - ALPHA / 2)
BOTH = "text and seeds"
SEEDS_ONLY = "seeds only"


@dataclass
class Draws:
    """One panel's replicates: which of the panel's seeds each draw takes, and how often each
    document is drawn."""

    seeds: list  # the panel's seed ids, sorted: what ``seed_pick`` indexes
    seed_pick: np.ndarray  # [B, J] index into ``seeds``
    doc_counts: np.ndarray  # [B, J, D]


def panel_draws(seeds: list, n_draws: int, n_docs: int, replicates: int = REPLICATES,
                rng_seed: int = RNG_SEED) -> Draws:
    """``n_draws`` seeds per replicate (a row's number of seeds), each one of ``seeds``."""
    rng = np.random.default_rng(rng_seed)
    pick = (rng.integers(0, len(seeds), size=(replicates, n_draws)) if len(seeds) > 1
            else np.zeros((replicates, 1), dtype=int))
    idx = rng.integers(0, n_docs, size=(replicates, pick.shape[1], n_docs))
    counts = np.zeros((replicates, pick.shape[1], n_docs))
    np.add.at(counts, (np.arange(replicates)[:, None, None], np.arange(pick.shape[1])[None, :, None], idx), 1)
    return Draws(list(seeds), pick, counts)


def panel_text(records: pd.DataFrame, token_sets: dict | None, rows: list[str],
               replicates: int = REPLICATES) -> tuple[np.ndarray | None, Draws | None]:
    """A panel's scored documents and its shared draws: the token counts of the documents of the one
    token set its records name, and draws over them of the panel's seeds (every seed any of its
    records has), as many per replicate as the row (records grouped by ``rows``) with the most
    seeds; (None, None) where the records name several token sets, or one ``token_sets`` does not
    hold (the cells then fall back to seeds alone)."""
    sets = records["token_set"].dropna().unique() if "token_set" in records else []
    if len(sets) != 1 or sets[0] not in (token_sets or {}):
        return None, None
    doc_tokens = np.asarray(token_sets[sets[0]]["doc_tokens"])
    n_draws = int(records.groupby(rows)["seed"].nunique().max())
    return doc_tokens, panel_draws(sorted(records["seed"].unique()), n_draws, len(doc_tokens), replicates)


@dataclass
class CellReplicates:
    """A cell's observed log-perplexities per seed [S, M] and their replicates [B, J, M] (NaN where
    a length is not defined); ``text`` False: the records had no per-document losses."""

    observed: np.ndarray
    replicates: np.ndarray | None
    text: bool


def cell_replicates(g: pd.DataFrame, ms: list[float], doc_tokens: np.ndarray | None, draws: Draws | None,
                    by: str = "multiple") -> CellReplicates:
    """``g``: the records of one cell (all seeds, all multiples); ``ms``: the values of column ``by``
    (``multiple``, or ``length`` where rows of one panel differ in what 1x means) in index order."""
    seeds = sorted(g["seed"].unique())
    observed = np.full((len(seeds), len(ms)), np.nan)
    for (seed, m), r in g.groupby(["seed", by]):
        observed[seeds.index(seed), ms.index(m)] = math.log(r["ppl"].iloc[0]) if pd.notna(r["ppl"].iloc[0]) else np.nan
    scored = g[g["ppl"].notna()]
    have = "doc_nats" in g and doc_tokens is not None and draws is not None and len(scored) and all(
        isinstance(x, list) and len(x) == len(doc_tokens) for x in scored["doc_nats"])
    if not have:
        return CellReplicates(observed, None, False)
    X = np.full((len(seeds), len(ms), len(doc_tokens)), np.nan)
    for _, r in scored.iterrows():
        X[seeds.index(r["seed"]), ms.index(r[by])] = r["doc_nats"]
    # a draw of panel seed j takes the cell's record of the same seed id (so rows are paired by seed);
    # a seed the cell lacks (a run not finished) takes one of the cell's own, in turn
    own = np.array([seeds.index(s) if s in seeds else j % len(seeds) for j, s in enumerate(draws.seeds)])
    pick = own[draws.seed_pick]
    nats = np.einsum("bjd,bjmd->bjm", draws.doc_counts, X[pick])
    tokens = draws.doc_counts @ doc_tokens.astype(float)  # [B, J]
    return CellReplicates(observed, nats / tokens[..., None], True)


def interval(values: np.ndarray) -> tuple[float, float]:
    v = values[np.isfinite(values)]
    if len(v) < len(values) or not len(v):
        return math.nan, math.nan
    return float(np.percentile(v, LO)), float(np.percentile(v, HI))


def ppl_stats(c: CellReplicates, k: int) -> tuple[float, float, float]:
    """Mean perplexity over seeds at multiple index k, with its interval."""
    obs = np.exp(c.observed[:, k])
    mean = float(obs.mean()) if np.isfinite(obs).all() else math.nan
    if c.replicates is not None:
        return (mean, *interval(np.exp(c.replicates[:, :, k]).mean(1)))
    h = ci95_halfwidth(obs)
    return mean, mean - h, mean + h


def ratio_stats(c: CellReplicates, k: int) -> tuple[float, float, float]:
    """Mean over seeds of ppl(multiple k) / ppl(1x), with its interval."""
    obs = np.exp(c.observed[:, k] - c.observed[:, 0])
    mean = float(obs.mean()) if np.isfinite(obs).all() else math.nan
    if c.replicates is not None:
        return (mean, *interval(np.exp(c.replicates[:, :, k] - c.replicates[:, :, 0]).mean(1)))
    h = ci95_halfwidth(obs)
    return mean, mean - h, mean + h


def mean_log_stats(c: CellReplicates) -> tuple[float, float, float]:
    """The mean log-perplexity over every evaluated length (and seeds): one figure per row that is
    low only when the row is good at 1x and at every longer length."""
    obs = c.observed.mean(1)
    mean = float(obs.mean()) if np.isfinite(obs).all() else math.nan
    if c.replicates is not None:
        return (mean, *interval(c.replicates.mean(2).mean(1)))
    h = ci95_halfwidth(obs)
    return mean, mean - h, mean + h


def p_versus(a: CellReplicates, b: CellReplicates, k: int) -> float:
    """Two-sided p-value of "a and b have the same mean log-perplexity at multiple k" (bootstrap_p)."""
    if a.replicates is not None and b.replicates is not None:
        return bootstrap_p(a.replicates[:, :, k].mean(1) - b.replicates[:, :, k].mean(1))
    n = min(len(a.observed), len(b.observed))
    return paired_pvalue(np.exp(a.observed[:n, k]), np.exp(b.observed[:n, k]))


# replicates on the far side of zero below which the Monte Carlo p-value is too coarse: the
# normal tail takes over (bootstrap_p)
FEW_IN_TAIL = 10


def bootstrap_p(d: np.ndarray) -> float:
    """Two-sided p-value of "the difference is 0" from its bootstrap replicates ``d``: the percentile
    p ``2 (t + 1) / (B + 1)``, t the replicates on the far side of zero (Davison and Hinkley's +1).
    That p cannot fall below 2 / (B + 1), 0.001 at 2000 replicates, so Holm's correction over a
    panel of 50 or more comparisons could never call a difference significant, however large. Where
    fewer than FEW_IN_TAIL replicates cross zero, the p-value is the normal tail of the replicates,
    ``2 Phi(-|mean d| / sd d)`` (the bootstrap standard-error test), never above the percentile p."""
    from scipy.stats import norm

    d = d[np.isfinite(d)]
    if not len(d):
        return math.nan
    tail = int(min((d <= 0).sum(), (d >= 0).sum()))
    p = float(min(1.0, 2 * (tail + 1) / (len(d) + 1)))
    sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
    if tail < FEW_IN_TAIL and sd > 0:
        p = min(p, float(2 * norm.sf(abs(float(d.mean())) / sd)))
    return p


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN stays NaN)."""
    p = np.asarray(pvalues, dtype=float)
    ok = np.flatnonzero(np.isfinite(p))
    out = np.full(len(p), np.nan)
    order = ok[np.argsort(p[ok], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(order) - rank) * p[i]))
        out[i] = running
    return out.tolist()

