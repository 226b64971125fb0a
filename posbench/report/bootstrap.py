"""Intervals and tests that are right for the seeds a sweep has, with the scored text carried in.

A perplexity in posbench depends on two random things: the seed the model was trained with, and
the text it is scored on. The two are not alike. Documents are many (76 in a default token set), so
resampling them is sound. Seeds are few (1, 3, 5): a bootstrap over three seeds has ten distinct
multisets, underestimates the seed variance by (n - 1) / n, and when the three per-seed values
agree in sign every replicate lands on one side. Measured by simulation, a two-level bootstrap
over 3 seeds covered the truth in about 76% of trials at a nominal 95%. So the two levels are
combined analytically instead:

* the seed level: the per-seed values y_1..y_n (a log-perplexity, a log-ratio of two lengths, or
  the difference of two rows' log-perplexities paired by seed id) give the seed variance of their
  mean, ``s_y^2 / n``, with n - 1 degrees of freedom;
* the text level: the documents of the token set are drawn with replacement (the same draws for
  every seed, every length and every row of a panel, since every record of a panel was scored on
  the same documents), and the variance of the mean over seeds across the draws, ``V_text``, is
  the part of the error that all seeds share (they were scored on the same text);
* ``SE^2 = s_y^2 / n + V_text``, and the interval and test use Student's t with the
  Welch-Satterthwaite degrees of freedom ``(u + V_text)^2 / (u^2 / (n - 1) + V_text^2 / (D - 1))``
  (D documents), where u is the seed term ``s_y^2 / n`` taken at its one-sided 75% upper
  confidence limit ``u = (s_y^2 / n) (n - 1) / chi2_{0.25, n-1}``: with the plain plug-in, three
  seeds that happen to agree give a small seed term and so many degrees of freedom, and the test
  rejected a true null in 7.5% of simulated trials; with the limit it holds 5%. With one seed it
  is the text alone (D - 1 degrees of freedom, nearly normal); where the text is negligible it is
  the exact t over seeds. The seed-by-text interaction is in both terms, which makes the interval
  slightly conservative, never anti-conservative.

Intervals are computed on the log scale and exponentiated, so a row's perplexity is the geometric
mean over seeds (exp of the mean log-perplexity) and its interval is that quantity's.

Tests between two rows:

* different weights (two encodings, two fine-tunes: the rows' run ids differ): the t-test above on
  the per-seed differences of the seeds both rows have. With fewer than two shared seeds there is no
  seed variance to compare against, and the comparison is "not resolvable with 1 seed" (no p-value).
* the same weights (rows evaluated from the same runs: ``fox`` and ``fox+logn``, RoPE and its
  scalings): the models are fixed, only the text varies, so the documents pair: the bootstrap
  p-value of the difference over the document draws (``bootstrap_p``; its normal tail where the
  draws are too few to resolve it, which is sound here because the resampled unit, documents, is
  numerous).

``tests/report/test_bootstrap.py`` checks by simulation that at 3 and 5 seeds the intervals cover
the truth in at least 93% of trials and the tests reject a true null in at most 6%.

Records without ``doc_nats`` (made before scored documents were recorded) fall back to seeds
alone: the t-interval and the paired t-test, and the table says which (``interval`` column).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from posbench.report.stats import ALPHA

REPLICATES = 2000
RNG_SEED = 20231  # fixed: a report is reproducible from its runs
BOTH = "text and seeds"
SEEDS_ONLY = "seeds only"
TEXT_ONLY = "text only (1 seed)"
SAME_WEIGHTS = "paired over documents (same weights)"
SEED_T = "t over seeds, with the text"
SEED_T_ONLY = "paired t over seeds"
DF_QUANTILE = 0.25  # seeds_and_text: the seed variance's upper confidence limit used for the degrees of freedom


@dataclass
class Draws:
    """One panel's document draws: how often each document is drawn in each replicate [B, D],
    shared by every seed, length and row of the panel (they were all scored on these documents)."""

    doc_counts: np.ndarray


def panel_draws(n_docs: int, replicates: int = REPLICATES, rng_seed: int = RNG_SEED) -> Draws:
    rng = np.random.default_rng(rng_seed)
    idx = rng.integers(0, n_docs, size=(replicates, n_docs))
    counts = np.zeros((replicates, n_docs))
    np.add.at(counts, (np.arange(replicates)[:, None], idx), 1)
    return Draws(counts)


def panel_text(records: pd.DataFrame, token_sets: dict | None,
               replicates: int = REPLICATES) -> tuple[np.ndarray | None, Draws | None]:
    """A panel's scored documents and its shared draws: the token counts of the documents of the one
    token set its records name, and draws over them; (None, None) where the records name several
    token sets, or one ``token_sets`` does not hold (the cells then fall back to seeds alone)."""
    sets = records["token_set"].dropna().unique() if "token_set" in records else []
    if len(sets) != 1 or sets[0] not in (token_sets or {}):
        return None, None
    doc_tokens = np.asarray(token_sets[sets[0]]["doc_tokens"])
    return doc_tokens, panel_draws(len(doc_tokens), replicates)


@dataclass
class CellReplicates:
    """A cell (one row of a table: all its seeds, all its lengths): the observed log-perplexity of
    each seed [S, M] (NaN where a length is not defined), the same on each document draw [B, S, M]
    (None: the records had no per-document losses), the seed ids in row order, the run ids (two
    cells with the same runs are the same weights) and the number of scored documents."""

    observed: np.ndarray
    replicates: np.ndarray | None
    text: bool
    seeds: tuple = ()
    runs: frozenset = frozenset()
    n_docs: int = 0


def cell_from_arrays(seeds, doc_nats: np.ndarray, doc_tokens: np.ndarray, draws: Draws | None,
                     runs=frozenset()) -> CellReplicates:
    """A cell from its per-document losses ``doc_nats`` [S, M, D] (summed nats of each document) and
    the documents' token counts [D]: each seed's log-perplexity, observed and on each draw."""
    doc_tokens = np.asarray(doc_tokens, dtype=float)
    observed = doc_nats.sum(-1) / doc_tokens.sum()
    if draws is None:
        return CellReplicates(observed, None, False, tuple(seeds), frozenset(runs), len(doc_tokens))
    nats = np.einsum("bd,smd->bsm", draws.doc_counts, doc_nats)
    tokens = draws.doc_counts @ doc_tokens  # [B]
    return CellReplicates(observed, nats / tokens[:, None, None], True, tuple(seeds), frozenset(runs), len(doc_tokens))


def cell_replicates(g: pd.DataFrame, ms: list[float], doc_tokens: np.ndarray | None, draws: Draws | None,
                    by: str = "multiple") -> CellReplicates:
    """``g``: the records of one cell (all seeds, all multiples); ``ms``: the values of column ``by``
    (``multiple``, or ``length`` where rows of one panel differ in what 1x means) in index order."""
    seeds = sorted(g["seed"].unique())
    runs = frozenset(g["run_id"]) if "run_id" in g else frozenset()
    observed = np.full((len(seeds), len(ms)), np.nan)
    for (seed, m), r in g.groupby(["seed", by]):
        observed[seeds.index(seed), ms.index(m)] = math.log(r["ppl"].iloc[0]) if pd.notna(r["ppl"].iloc[0]) else np.nan
    scored = g[g["ppl"].notna()]
    have = "doc_nats" in g and doc_tokens is not None and draws is not None and len(scored) and all(
        isinstance(x, list) and len(x) == len(doc_tokens) for x in scored["doc_nats"])
    if not have:
        return CellReplicates(observed, None, False, tuple(seeds), runs, 0)
    X = np.full((len(seeds), len(ms), len(doc_tokens)), np.nan)
    for _, r in scored.iterrows():
        X[seeds.index(r["seed"]), ms.index(r[by])] = r["doc_nats"]
    cell = cell_from_arrays(seeds, X, doc_tokens, draws, runs)
    # the recorded perplexity is the observed value (the sum of the documents' losses equals it to
    # rounding; the record's own number is what every other table shows)
    cell.observed = observed
    return cell


@dataclass(frozen=True)
class Estimate:
    """A mean over seeds on the log scale with its 95% interval, standard error and degrees of freedom."""

    mean: float
    lo: float
    hi: float
    se: float = math.nan
    df: float = math.nan


NO_ESTIMATE = Estimate(math.nan, math.nan, math.nan)


def estimate(y: np.ndarray, reps: np.ndarray | None, n_docs: int = 0) -> Estimate:
    """The mean of the per-seed values ``y`` [S] with its 95% interval over seeds and text (module
    doc): ``reps`` [B, S] are the same values on each document draw (None: seeds alone)."""
    y = np.asarray(y, dtype=float)
    if len(y) == 0 or not np.isfinite(y).all():
        return NO_ESTIMATE
    if reps is None:
        return seeds_and_text(y, None, 0)
    m = reps.mean(1)
    if not np.isfinite(m).all():
        return Estimate(float(y.mean()), math.nan, math.nan)
    return seeds_and_text(y, float(m.var(ddof=1)), n_docs - 1)


def seeds_and_text(y: np.ndarray, text_var: float | None, text_df: float) -> Estimate:
    """Student's t interval of mean(y) with SE^2 = var(y) / n + ``text_var`` (the variance of the mean
    that the seeds share through their common text; None: not known, seeds alone) and the
    Welch-Satterthwaite degrees of freedom, ``text_df`` those of the text term."""
    n = len(y)
    mean = float(np.mean(y))
    seed_var = float(np.var(y, ddof=1)) / n if n > 1 else 0.0
    if text_var is None and n < 2:
        return Estimate(mean, math.nan, math.nan)
    text_var = text_var or 0.0
    se2 = seed_var + text_var
    if se2 <= 0:
        return Estimate(mean, mean, mean, 0.0, math.inf)
    # Satterthwaite's df with the seed variance taken at its one-sided 75% upper confidence limit:
    # the plain plug-in gives a large df exactly when the few seeds happen to agree (a small s_y^2),
    # which made the test reject a true null in 7.5% of simulated trials at 3 seeds; this holds 5%
    seed_df = seed_var * (n - 1) / stats.chi2.ppf(DF_QUANTILE, n - 1) if n > 1 else 0.0
    parts = (seed_df ** 2 / (n - 1) if n > 1 else 0.0) + (text_var ** 2 / text_df if text_df > 0 else 0.0)
    df = (seed_df + text_var) ** 2 / parts if parts > 0 else math.inf
    half = float(stats.t.ppf(1 - ALPHA / 2, df)) * math.sqrt(se2)
    return Estimate(mean, mean - half, mean + half, math.sqrt(se2), df)


def _column(c: CellReplicates, k: int, base: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The per-seed values of length k (minus length ``base``) and their draws."""
    y = c.observed[:, k] - (c.observed[:, base] if base is not None else 0)
    reps = None if c.replicates is None else c.replicates[:, :, k] - (c.replicates[:, :, base] if base is not None else 0)
    return y, reps


def _exp(e: Estimate) -> tuple[float, float, float]:
    return math.exp(e.mean) if np.isfinite(e.mean) else math.nan, math.exp(e.lo) if np.isfinite(e.lo) else math.nan, \
        math.exp(e.hi) if np.isfinite(e.hi) else math.nan


def ppl_stats(c: CellReplicates, k: int) -> tuple[float, float, float]:
    """Perplexity at multiple index k (geometric mean over seeds), with its 95% interval."""
    return _exp(estimate(*_column(c, k), c.n_docs))


def ratio_stats(c: CellReplicates, k: int, base: int = 0) -> tuple[float, float, float]:
    """ppl(multiple k) / ppl(multiple ``base``) (geometric mean over seeds), with its 95% interval."""
    return _exp(estimate(*_column(c, k, base), c.n_docs))


def pair_ratio_stats(a: CellReplicates, b: CellReplicates, k: int) -> tuple[float, float, float]:
    """ppl_a / ppl_b at index k over the seeds both cells have, paired by seed id (two rows of the
    same runs: a control's ratio to its row), with its 95% interval."""
    ia, ib = _shared(a, b)
    if not ia:
        return math.nan, math.nan, math.nan
    y = a.observed[ia, k] - b.observed[ib, k]
    reps = None if a.replicates is None or b.replicates is None else a.replicates[:, ia, k] - b.replicates[:, ib, k]
    return _exp(estimate(y, reps, a.n_docs))


def mean_log_stats(c: CellReplicates) -> tuple[float, float, float]:
    """The mean log-perplexity over every evaluated length (and seeds): one figure per row that is
    low only when the row is good at 1x and at every longer length."""
    e = estimate(c.observed.mean(1), None if c.replicates is None else c.replicates.mean(2), c.n_docs)
    return e.mean, e.lo, e.hi


@dataclass(frozen=True)
class Comparison:
    """The test of "two rows have the same mean log-perplexity": its p-value (NaN: not resolvable, or
    nothing to compare), the test used, the seeds it rests on and, where it is not resolvable, why."""

    p: float
    test: str
    seeds: int
    note: str = ""


def not_resolvable(n: int) -> str:
    return f"not resolvable with {n} seed{'s' if n != 1 else ''}"


def _shared(a: CellReplicates, b: CellReplicates) -> tuple[list[int], list[int]]:
    common = [s for s in a.seeds if s in b.seeds]
    return [a.seeds.index(s) for s in common], [b.seeds.index(s) for s in common]


def compare(a: CellReplicates, b: CellReplicates, k: int) -> Comparison:
    """Two rows at index k, paired by seed id (module doc: the documents pair where the weights are
    the same, the seeds where they differ)."""
    ia, ib = _shared(a, b)
    n = len(ia)
    if n == 0:
        return Comparison(math.nan, "", 0, "no seed in common")
    d = a.observed[ia, k] - b.observed[ib, k]
    if not np.isfinite(d).all():
        return Comparison(math.nan, "", n)
    reps = None if a.replicates is None or b.replicates is None else a.replicates[:, ia, k] - b.replicates[:, ib, k]
    if a.runs and a.runs == b.runs and reps is not None:
        return Comparison(bootstrap_p(reps.mean(1)), SAME_WEIGHTS, n)
    if n < 2:
        return Comparison(math.nan, SEED_T if reps is not None else SEED_T_ONLY, n, not_resolvable(n))
    e = estimate(d, reps, a.n_docs)
    if e.se == 0:
        p = 1.0 if abs(e.mean) < 1e-12 else 0.0
    else:
        p = float(2 * stats.t.sf(abs(e.mean) / e.se, e.df))
    return Comparison(p, SEED_T if reps is not None else SEED_T_ONLY, n)


def p_versus(a: CellReplicates, b: CellReplicates, k: int) -> float:
    """Two-sided p-value of "a and b have the same mean log-perplexity at index k" (``compare``)."""
    return compare(a, b, k).p


# replicates on the far side of zero below which the Monte Carlo p-value is too coarse: the
# normal tail takes over (bootstrap_p)
FEW_IN_TAIL = 10


def bootstrap_p(d: np.ndarray) -> float:
    """Two-sided p-value of "the difference is 0" from its bootstrap replicates ``d`` over documents:
    the percentile p ``2 (t + 1) / (B + 1)``, t the replicates on the far side of zero (Davison and
    Hinkley's +1). That p cannot fall below 2 / (B + 1), 0.001 at 2000 replicates; where fewer than
    FEW_IN_TAIL replicates cross zero, the p-value is the normal tail of the replicates,
    ``2 Phi(-|mean d| / sd d)`` (the bootstrap standard-error test), never above the percentile p.
    Used only where the resampled unit is numerous (documents, within one model's rows)."""
    d = d[np.isfinite(d)]
    if not len(d):
        return math.nan
    tail = int(min((d <= 0).sum(), (d >= 0).sum()))
    p = float(min(1.0, 2 * (tail + 1) / (len(d) + 1)))
    sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
    if tail < FEW_IN_TAIL and sd > 0:
        p = min(p, float(2 * stats.norm.sf(abs(float(d.mean())) / sd)))
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


def tied_ranks(cells: list[CellReplicates | None], k: int | None) -> list[float]:
    """Ranks with ties drawn from the tests: a row's rank is 1 + the number of rows lower than it by
    a significant difference (``compare`` at ALPHA, each pair on its own: the pairs are not a
    pre-declared family), so rows that no test separates share a rank. ``k``: the length index;
    None: the mean log-perplexity over every length. NaN for a row without a value."""
    cells = [c if c is None or k is not None else _mean_over_lengths(c) for c in cells]
    col = 0 if k is None else k
    means = [c.observed[:, col].mean() if c is not None and np.isfinite(c.observed[:, col]).all() else math.nan
             for c in cells]
    ranks = []
    for i, c in enumerate(cells):
        if not np.isfinite(means[i]):
            ranks.append(math.nan)
            continue
        ahead = sum(1 for j, other in enumerate(cells) if j != i and np.isfinite(means[j]) and means[j] < means[i]
                    and compare(other, c, col).p < ALPHA)
        ranks.append(float(1 + ahead))
    return ranks


def _mean_over_lengths(c: CellReplicates) -> CellReplicates:
    return CellReplicates(c.observed.mean(1, keepdims=True),
                          None if c.replicates is None else c.replicates.mean(2, keepdims=True),
                          c.text, c.seeds, c.runs, c.n_docs)
