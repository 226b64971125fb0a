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
  (D documents), where u is the seed term ``s_y^2 / n`` taken at its one-sided 95% upper
  confidence limit ``u = (s_y^2 / n) (n - 1) / chi2_{0.05, n-1}``: with the plain plug-in, three
  seeds that happen to agree give a small seed term and so many degrees of freedom, and the test
  rejected a true null in 7.5% of simulated trials. The limit was at 75% before the statistics were checked by simulation: that
  held 5%, but not the tail Holm reads (with the noise structure of RoPE's committed 16x/1x, seed
  share 0.89, P(p < 0.001 | H0) was 0.0053 at 3 seeds); at 95% it is at most 0.002 on every
  structure estimated from the committed data (``tests/report/analysis/test_bootstrap.py``). The text
  term's degrees of freedom are not taken as D - 1 but from the documents' excess kurtosis k
  (``text_df``: the variance of a sample variance is ``sigma^4 (2 / (D - 1) + k / D)``, so its
  degrees of freedom are ``2 / (2 / (D - 1) + k / D)``): per-document losses are heavy-tailed
  (73 of 264 structures in results/budget have k > 10), and one extreme document makes the text
  variance far less certain than D - 1 says. With one seed it is the text alone; where the text
  is negligible it is the exact t over seeds. The seed-by-text interaction is in both terms,
  which makes the interval slightly conservative, never anti-conservative.

  What no choice of degrees of freedom can give: where the text's population holds rare extreme
  documents (one of 76 in results/budget carries most of some differences), a draw of text that
  happens to miss them gives a small variance and a shifted mean, and the interval misses. So
  every difference between rows is reported with its leave-one-document-out range and the largest
  single document's share (``Comparison``), and flagged where one document decides its sign.

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

``tests/report/analysis/test_bootstrap.py`` checks by simulation that at 3 and 5 seeds the intervals cover
the truth in at least 93% of trials and the tests reject a true null in at most 6%, on Gaussian
scenarios and on structures resampled from the committed per-document losses (seed-dominated and
heavy-tailed), where P(p < 0.001 | H0) stays at most 0.002.

Records without ``doc_nats`` (made before scored documents were recorded) fall back to seeds
alone: the t-interval and the paired t-test, and the table says which (``interval`` column).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from posbench.report.analysis.stats import ALPHA

REPLICATES = 2000
RNG_SEED = 20231  # fixed: a report is reproducible from its runs
BOTH = "text and seeds"
SEEDS_ONLY = "seeds only"
TEXT_ONLY = "text only (1 seed)"
SAME_WEIGHTS = "paired over documents (same weights)"
SEED_T = "t over seeds, with the text"
SEED_T_ONLY = "paired t over seeds"
DF_QUANTILE = 0.05  # seeds_and_text: the seed variance's one-sided 95% upper limit, used for the degrees of freedom


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
    docs: np.ndarray | None = None  # each document's summed nats [S, M, D] (None: not recorded)
    doc_tokens: np.ndarray | None = None  # each document's scored tokens [D]


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
    return CellReplicates(observed, nats / tokens[:, None, None], True, tuple(seeds), frozenset(runs), len(doc_tokens),
                          np.asarray(doc_nats, dtype=float), doc_tokens)


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


@dataclass(frozen=True)
class Documents:
    """A statistic's per-document parts: each document's summed nats of the statistic, averaged over
    seeds [D] (a difference of two columns or rows is the difference of their nats), and its scored
    tokens [D]. The statistic is ``sum(nats) / sum(tokens)``."""

    nats: np.ndarray
    tokens: np.ndarray

    def influence(self) -> np.ndarray:
        """Each document's influence on the statistic, ``(nats_d - V tokens_d) / sum(tokens)``, V the
        statistic: the terms whose sum of squares is its variance over documents."""
        v = self.nats.sum() / self.tokens.sum()
        return (self.nats - v * self.tokens) / self.tokens.sum()

    def leave_one_out(self) -> np.ndarray:
        """The statistic with each document left out [D]."""
        return (self.nats.sum() - self.nats) / (self.tokens.sum() - self.tokens)


def text_df(docs: Documents | None, n_docs: int) -> float:
    """The degrees of freedom of the text variance: ``2 / (2 / (D - 1) + k / D)``, k the excess
    kurtosis of the documents' influences (0 where they are light-tailed: D - 1); D - 1 without them."""
    if docs is None or n_docs < 4:
        return float(n_docs - 1)
    with np.errstate(all="ignore"), warnings.catch_warnings():  # near-identical influences: k is NaN, D - 1 below
        warnings.simplefilter("ignore", RuntimeWarning)
        k = float(stats.kurtosis(docs.influence(), bias=False))
    return 2.0 / (2.0 / (n_docs - 1) + max(k, 0.0) / n_docs) if np.isfinite(k) else float(n_docs - 1)


def estimate(y: np.ndarray, reps: np.ndarray | None, n_docs: int = 0, docs: Documents | None = None) -> Estimate:
    """The mean of the per-seed values ``y`` [S] with its 95% interval over seeds and text (module
    doc): ``reps`` [B, S] are the same values on each document draw (None: seeds alone); ``docs``
    the statistic's per-document parts, whose tails set the text's degrees of freedom."""
    y = np.asarray(y, dtype=float)
    if len(y) == 0 or not np.isfinite(y).all():
        return NO_ESTIMATE
    if reps is None:
        return seeds_and_text(y, None, 0)
    m = reps.mean(1)
    if not np.isfinite(m).all():
        return Estimate(float(y.mean()), math.nan, math.nan)
    return seeds_and_text(y, float(m.var(ddof=1)), text_df(docs, n_docs))


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
    # Satterthwaite's df with the seed variance taken at its one-sided 95% upper confidence limit:
    # the plain plug-in gives a large df exactly when the few seeds happen to agree (a small s_y^2),
    # which made the test reject a true null in 7.5% of simulated trials at 3 seeds (module doc)
    seed_df = seed_var * (n - 1) / stats.chi2.ppf(DF_QUANTILE, n - 1) if n > 1 else 0.0
    parts = (seed_df ** 2 / (n - 1) if n > 1 else 0.0) + (text_var ** 2 / text_df if text_df > 0 else 0.0)
    df = (seed_df + text_var) ** 2 / parts if parts > 0 else math.inf
    half = float(stats.t.ppf(1 - ALPHA / 2, df)) * math.sqrt(se2)
    return Estimate(mean, mean - half, mean + half, math.sqrt(se2), df)


def _documents(nats: np.ndarray | None, c: CellReplicates) -> Documents | None:
    """A statistic's per-document parts from its per-seed document nats [S, D]."""
    if nats is None or c.doc_tokens is None or not np.isfinite(nats).all():
        return None
    return Documents(nats.mean(0), np.asarray(c.doc_tokens, dtype=float))


def _column(c: CellReplicates, k: int, base: int | None = None) -> tuple[np.ndarray, np.ndarray | None, int, Documents | None]:
    """The per-seed values of length k (minus length ``base``), their draws, the number of documents
    and the per-document parts: the arguments of ``estimate``."""
    y = c.observed[:, k] - (c.observed[:, base] if base is not None else 0)
    reps = None if c.replicates is None else c.replicates[:, :, k] - (c.replicates[:, :, base] if base is not None else 0)
    nats = None if c.docs is None else c.docs[:, k] - (c.docs[:, base] if base is not None else 0)
    return y, reps, c.n_docs, _documents(nats, c)


def _exp(e: Estimate) -> tuple[float, float, float]:
    return math.exp(e.mean) if np.isfinite(e.mean) else math.nan, math.exp(e.lo) if np.isfinite(e.lo) else math.nan, \
        math.exp(e.hi) if np.isfinite(e.hi) else math.nan


def ppl_stats(c: CellReplicates, k: int) -> tuple[float, float, float]:
    """Perplexity at multiple index k (geometric mean over seeds), with its 95% interval."""
    return _exp(estimate(*_column(c, k)))


def ratio_stats(c: CellReplicates, k: int, base: int = 0) -> tuple[float, float, float]:
    """ppl(multiple k) / ppl(multiple ``base``) (geometric mean over seeds), with its 95% interval."""
    return _exp(estimate(*_column(c, k, base)))


def pair_ratio_stats(a: CellReplicates, b: CellReplicates, k: int) -> tuple[float, float, float]:
    """ppl_a / ppl_b at index k over the seeds both cells have, paired by seed id (two rows of the
    same runs: a control's ratio to its row), with its 95% interval."""
    ia, ib = _shared(a, b)
    if not ia:
        return math.nan, math.nan, math.nan
    return _exp(estimate(*_pair(a, b, k, ia, ib)))


def _pair(a: CellReplicates, b: CellReplicates, k: int, ia: list[int], ib: list[int]):
    """``estimate``'s arguments for a - b at index k over the seeds ``ia`` / ``ib`` (paired by seed id)."""
    y = a.observed[ia, k] - b.observed[ib, k]
    reps = None if a.replicates is None or b.replicates is None else a.replicates[:, ia, k] - b.replicates[:, ib, k]
    nats = None if a.docs is None or b.docs is None else a.docs[ia, k] - b.docs[ib, k]
    return y, reps, a.n_docs, _documents(nats, a)


@dataclass(frozen=True)
class Parts:
    """A per-seed statistic on the log scale, ready for ``estimate``: the seed ids, the values [S],
    their document draws [B, S] (None: seeds alone), the number of documents and the per-document parts."""

    seeds: tuple
    y: np.ndarray
    reps: np.ndarray | None
    n_docs: int
    docs: Documents | None

    def estimate(self) -> Estimate:
        return estimate(self.y, self.reps, self.n_docs, self.docs)


def ratio_parts(c: CellReplicates, k: int, base: int = 0) -> Parts:
    """log ppl(k) - log ppl(``base``) per seed: ``ratio_stats``'s statistic."""
    return Parts(c.seeds, *_column(c, k, base))


def level_parts(c: CellReplicates, k: int = 0) -> Parts:
    """log ppl(k) per seed: ``ppl_stats``'s statistic (at k = 0, the perplexity at 1x)."""
    return Parts(c.seeds, *_column(c, k))


def equal_context_parts(row: CellReplicates, control: CellReplicates, k: int) -> Parts | None:
    """The verdict's statistic on equal context, ``log ppl(k) - log min(ppl(1x), ppl_control(k))``, per
    seed paired by seed id (docs/protocols.md, "The verdict on equal context"); None without a shared seed.

    On non-overlapping windows a 1x token sees train_len / 2 keys on average and a 16x token 8
    train_len, so 16x/1x rewards a model that reads only its last train_len keys (its 16x tokens see
    twice the 1x context). The baseline here is the best the same weights do when no token has more
    than train_len keys: their window control at the same length (``control``: a sliding window of
    train_len keys in every layer, the same tokens scored) or their 1x, whichever is lower for that
    seed. The window alone would flatter an encoding whose window control is itself broken (NoPE
    loses its first-token anchor, sinusoidal still meets unseen absolute positions); 1x alone is
    the unequal baseline this replaces. The minimum is taken per seed and per document draw, so the
    interval is that of this one statistic."""
    ia, ib = _shared(row, control)
    if not ia:
        return None
    full, one, window = row.observed[ia, k], row.observed[ia, 0], control.observed[ib, k]
    use_window = window < one  # the lower baseline of each seed, chosen on the observed values
    y = full - np.where(use_window, window, one)
    reps = None
    if row.replicates is not None and control.replicates is not None:
        reps = row.replicates[:, ia, k] - np.minimum(row.replicates[:, ia, 0], control.replicates[:, ib, k])
    docs = None
    if row.docs is not None and control.docs is not None:
        base = np.where(use_window[:, None], control.docs[ib, k], row.docs[ia, 0])
        docs = _documents(row.docs[ia, k] - base, row)
    return Parts(tuple(row.seeds[i] for i in ia), y, reps, row.n_docs, docs)


def equal_context_stats(row: CellReplicates, control: CellReplicates, k: int) -> tuple[float, float, float]:
    """``equal_context_parts``' ratio with its 95% interval."""
    parts = equal_context_parts(row, control, k)
    return (math.nan, math.nan, math.nan) if parts is None else _exp(parts.estimate())


@dataclass(frozen=True)
class Change:
    """How a statistic moved from one budget to a larger one, per doubling of the budget: the factor
    with its 95% interval (``lo``, ``hi``), its 90% interval (``lo90``, ``hi90``: the two one-sided
    tests of an equivalence at 5% each) and the two-sided p-value of "no change"; NaN where the two
    have no seed in common."""

    factor: float
    lo: float
    hi: float
    lo90: float
    hi90: float
    p: float
    seeds: int
    one_document: bool = False  # leaving one scored document out turns the change's sign (``heavy_document``)

    def within(self, margin: float) -> bool:
        """The equivalence test (TOST): the 90% interval inside [1 / (1 + margin), 1 + margin]."""
        return bool(np.isfinite(self.lo90) and self.lo90 >= 1 / (1 + margin) and self.hi90 <= 1 + margin)

    def moved(self) -> bool:
        """The 95% interval excludes 1 (no change)."""
        return bool(np.isfinite(self.lo) and (self.lo > 1 or self.hi < 1))


NO_CHANGE = Change(*(math.nan,) * 6, 0)


def paired_change(before: Parts | None, after: Parts | None, doublings: float) -> Change:
    """The change of a per-seed statistic from ``before`` to ``after`` (one configuration's seeds at
    two budgets: cool-down branches of one trunk, scored on the same documents), paired by seed id and
    divided by the number of doublings between the budgets, with the report's interval (the seeds'
    variance with the text's added, ``estimate``). Two points scored on different text (segments of
    another length, another corpus) keep the paired draws' variance and take the degrees of freedom
    of both texts' terms (``combined_df``)."""
    if before is None or after is None or doublings <= 0:
        return NO_CHANGE
    common = [s for s in before.seeds if s in after.seeds]
    if not common:
        return NO_CHANGE
    ia, ib = [before.seeds.index(s) for s in common], [after.seeds.index(s) for s in common]
    y = (after.y[ib] - before.y[ia]) / doublings
    reps = None if before.reps is None or after.reps is None else (after.reps[:, ib] - before.reps[:, ia]) / doublings
    both = before.docs is not None and after.docs is not None
    same_text = both and before.docs.tokens.shape == after.docs.tokens.shape and np.array_equal(before.docs.tokens,
                                                                                                 after.docs.tokens)
    docs = None
    if not both or same_text or reps is None:
        docs = Documents((after.docs.nats - before.docs.nats) / doublings, before.docs.tokens) if same_text else None
        e = estimate(y, reps, before.n_docs, docs)
    else:
        # scored on different texts (two lengths' segments, two corpora): the variance is the paired draws'
        # (where the documents correspond, their errors correlate); its degrees of freedom come from both texts'
        # terms, each from its own documents' tails, not from one text's D - 1. Drawn independently (other
        # documents), the two terms add (Satterthwaite); drawn together (the same documents, the same draws:
        # panel_draws is seeded), the difference has no more degrees of freedom than the less certain text
        terms = [text_term(p.reps[:, idx], p.docs, p.n_docs, doublings) for p, idx in ((before, ia), (after, ib))]
        df = min(d for _, d in terms) if before.n_docs == after.n_docs else combined_df(terms)
        e = seeds_and_text(y, float(reps.mean(1).var(ddof=1)), df)
    if not np.isfinite(e.lo):
        return Change(math.exp(e.mean) if np.isfinite(e.mean) else math.nan, *(math.nan,) * 5, len(common))
    t90 = float(stats.t.ppf(0.95, e.df)) * e.se
    p = float(2 * stats.t.sf(abs(e.mean) / e.se, e.df)) if e.se > 0 else (1.0 if e.mean == 0 else 0.0)
    return Change(math.exp(e.mean), math.exp(e.lo), math.exp(e.hi), math.exp(e.mean - t90), math.exp(e.mean + t90), p,
                  len(common), heavy_document(docs).get("one_document", False))


def paired_difference(a: Parts, b: Parts) -> Change:
    """``a - b`` per seed, paired by seed id (two rows' statistics on the same text, e.g. their
    log(16x / 1x)): ``paired_change`` with b before and a after, over one "doubling"."""
    return paired_change(b, a, 1.0)


def third_seed_range(parts: Parts, decided, span: float = 8.0, points: int = 801) -> tuple[float, float] | None:
    """What one more seed would need to show: the range of a third seed's value (on the statistic's
    log scale) for which the interval of the three seeds would satisfy ``decided(lo, hi)`` (log
    scale), the text's variance held as the two seeds measure it; None where no value would (then
    one more seed cannot settle it alone). Searched on a grid of ``span`` seed spreads (or standard
    errors, the larger) around the two seeds' mean."""
    y = np.asarray(parts.y, dtype=float)
    if len(y) != 2 or not np.isfinite(y).all():
        return None
    text_var, tdf = None, 0.0
    if parts.reps is not None and np.isfinite(parts.reps).all():
        text_var, tdf = text_term(parts.reps, parts.docs, parts.n_docs)
    scale = max(abs(y[1] - y[0]), math.sqrt(text_var or 0.0), 1e-6)
    grid = y.mean() + np.linspace(-span, span, points) * scale
    ok = [bool(np.isfinite((e := seeds_and_text(np.append(y, v), text_var, tdf)).lo) and decided(e.lo, e.hi))
          for v in grid]
    if not any(ok):
        return None
    first, last = ok.index(True), len(ok) - 1 - ok[::-1].index(True)
    # a range that reaches the grid's edge is open on that side (every value beyond it decides too)
    return (-math.inf if first == 0 else float(grid[first]), math.inf if last == len(grid) - 1 else float(grid[last]))


def range_words(lo: float, hi: float, digits: int = 2) -> str:
    """A range of values in words, open where an end is infinite: "1.20 to 1.45", "at least 1.20"."""
    if not np.isfinite(lo) and not np.isfinite(hi):
        return "any value"
    if not np.isfinite(hi):
        return f"at least {lo:.{digits}f}"
    if not np.isfinite(lo) or lo <= 0:
        return f"at most {hi:.{digits}f}"
    return f"{lo:.{digits}f} to {hi:.{digits}f}"


def text_term(reps: np.ndarray, docs: Documents | None, n_docs: int, doublings: float = 1.0) -> tuple[float, float]:
    """One text's term of a statistic's variance: the variance over document draws of its mean over
    seeds (``reps`` [B, S]), divided by ``doublings``^2, and its degrees of freedom (``text_df``)."""
    return float(reps.mean(1).var(ddof=1)) / doublings ** 2, text_df(docs, n_docs)


def combined_df(terms: list[tuple[float, float]]) -> float:
    """The Welch-Satterthwaite degrees of freedom of a sum of variance terms, each (variance, df)."""
    parts = sum(v ** 2 / d for v, d in terms if d > 0)
    total = sum(v for v, _ in terms)
    return total ** 2 / parts if parts > 0 else math.inf


def unpaired_change(before: Parts | None, after: Parts | None, doublings: float) -> Change:
    """The change of a statistic between two sets of weights that share no seed (two points of an
    axis trained apart), per doubling: the difference of the two estimates (each over its own seeds
    and text, ``estimate``) with Welch's interval, ``se^2 = se_a^2 + se_b^2`` and the
    Welch-Satterthwaite degrees of freedom. Text is not paired (the two may score other documents),
    so the interval is the wider one a paired test would narrow. ``seeds``: the fewer of the two."""
    if before is None or after is None or doublings <= 0:
        return NO_CHANGE
    a, b = before.estimate(), after.estimate()
    n = min(len(before.seeds), len(after.seeds))
    if not (np.isfinite(a.mean) and np.isfinite(b.mean)):
        return Change(*(math.nan,) * 6, n)
    mean = (b.mean - a.mean) / doublings
    if not (np.isfinite(a.se) and np.isfinite(b.se)):
        return Change(math.exp(mean), *(math.nan,) * 5, n)
    se2 = a.se ** 2 + b.se ** 2
    if se2 <= 0:
        return Change(math.exp(mean), *(math.exp(mean),) * 4, 1.0 if mean == 0 else 0.0, n)
    parts = sum(e.se ** 4 / e.df for e in (a, b) if e.df > 0 and np.isfinite(e.df))
    df = se2 ** 2 / parts if parts > 0 else math.inf
    se = math.sqrt(se2) / doublings
    half, t90 = float(stats.t.ppf(1 - ALPHA / 2, df)) * se, float(stats.t.ppf(0.95, df)) * se
    p = float(2 * stats.t.sf(abs(mean) / se, df))
    return Change(math.exp(mean), math.exp(mean - half), math.exp(mean + half), math.exp(mean - t90),
                  math.exp(mean + t90), p, n)


def change_between(before: Parts | None, after: Parts | None, doublings: float) -> tuple[Change, bool]:
    """The change from ``before`` to ``after`` per doubling and whether it was paired: paired by seed
    (``paired_change``) where the two share a seed, else unpaired (``unpaired_change``)."""
    if before is not None and after is not None and set(before.seeds) & set(after.seeds):
        return paired_change(before, after, doublings), True
    return unpaired_change(before, after, doublings), False


def mean_log_stats(c: CellReplicates) -> tuple[float, float, float]:
    """The mean log-perplexity over every evaluated length (and seeds): one figure per row that is
    low only when the row is good at 1x and at every longer length."""
    e = estimate(c.observed.mean(1), None if c.replicates is None else c.replicates.mean(2), c.n_docs,
                 None if c.docs is None else _documents(c.docs.mean(1), c))
    return e.mean, e.lo, e.hi


@dataclass(frozen=True)
class Comparison:
    """The test of "two rows have the same mean log-perplexity": its p-value (NaN: not resolvable, or
    nothing to compare), the test used, the seeds it rests on and, where it is not resolvable, why;
    and how much one document carries (``heavy_document``): the difference's range with each document
    left out in turn (``loo_lo``, ``loo_hi``, log scale), the largest single document's share of it
    (``doc_share``: its influence over the difference), and ``one_document`` where leaving one
    document out turns the difference's sign."""

    p: float
    test: str
    seeds: int
    note: str = ""
    loo_lo: float = math.nan
    loo_hi: float = math.nan
    doc_share: float = math.nan
    one_document: bool = False


def heavy_document(docs: Documents | None) -> dict:
    """The leave-one-document-out fields of a ``Comparison`` for a difference's per-document parts."""
    if docs is None or len(docs.nats) < 2:
        return {}
    total = docs.nats.sum() / docs.tokens.sum()
    loo = docs.leave_one_out()
    share = float(np.abs(docs.influence()).max() / abs(total)) if total != 0 else math.inf
    return {"loo_lo": float(loo.min()), "loo_hi": float(loo.max()), "doc_share": share,
            "one_document": bool(total != 0 and (np.sign(loo) != np.sign(total)).any())}


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
    d, reps, n_docs, docs = _pair(a, b, k, ia, ib)
    if not np.isfinite(d).all():
        return Comparison(math.nan, "", n)
    heavy = heavy_document(docs)
    if a.runs and a.runs == b.runs and reps is not None:
        return Comparison(bootstrap_p(reps.mean(1)), SAME_WEIGHTS, n, **heavy)
    if n < 2:
        return Comparison(math.nan, SEED_T if reps is not None else SEED_T_ONLY, n, not_resolvable(n), **heavy)
    e = estimate(d, reps, n_docs, docs)
    if e.se == 0:
        p = 1.0 if abs(e.mean) < 1e-12 else 0.0
    else:
        p = float(2 * stats.t.sf(abs(e.mean) / e.se, e.df))
    return Comparison(p, SEED_T if reps is not None else SEED_T_ONLY, n, **heavy)


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
