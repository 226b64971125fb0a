"""The three measures side by side: does a row that extrapolates well by one measure do so by the others?

Three measures of one encoding (a row) each answer "does it extrapolate", each its own way:

    ratio on equal context   the verdict's statistic (posbench/report/analysis/bootstrap.py
                             equal_context_parts): perplexity at the verdict's multiple over the lower of
                             1x and the window control's, per seed; a flat model has a low ratio
    key-token excess         the share of key tokens (the full pass far better than its window control
                             ``+swaL``) minus the mirror share (the window better by the same margin),
                             per seed at the verdict's multiple (posbench/report/analysis/key_tokens.py);
                             a model that uses far context has a high excess
    effective length         a task run's longest length up to which the mean accuracy over seeds is at
                             or above ``--threshold`` in every condition of every length
                             (posbench/report/analysis/task_frames.py effective_length); long is good

A study is one protocol, model shape, train_len and task; its rows are the encodings (the table's
unwindowed rows with a window control) whose LM runs kept per-token losses and whose task runs (same
model and train_len) were scored: the variant names match. Models of one width, depth and head count
are one study (``model_groups``): a recurrent or hybrid pattern (``small_gdn``) joins the attention rows
of its shape (``small``) as the row ``nope (small_gdn)`` (every row of a pattern is named with its model), since each model name is a panel of its own
elsewhere in the report and alone it would never make a study. The section is shown where some study
has at least ``MIN_ROWS`` such rows.

Each measure is oriented so that higher is better (the ratio as minus its log), and per pair of
measures the section gives Spearman's rank correlation across the rows (scipy.stats.spearmanr) with a
95% percentile interval over seeds: each of ``REPLICATES`` replicates (numpy generator seeded with
``RNG_SEED``) draws every row's seeds with replacement (its LM seeds once for the two LM measures,
which come from the same runs; its task seeds apart), recomputes each row's measures from the seeds
drawn (the mean of the per-seed values; the effective length from the mean accuracy of the seeds
drawn) and the correlation. A replicate whose measure ties every row has no correlation and is left
out. The words come from the interval alone: **agree** where it lies above 0, **disagree** where below,
**cannot be told with N seeds** otherwise, where a row has a single seed (nothing to resample), or where
a measure ties every row as measured (no correlation to call agreement).

What the correlation's interval covers, checked by simulation (tests/report/sections/test_measures.py):
the correlation that the rows' means over this many seeds have on average, what another set of as many
seeds would give, in about 95% of studies at 3 seeds; not the correlation of the rows' noise-free
measures, which the seeds' noise moves (mostly towards 0: with seed noise twice the rows' spacing the
interval held a true 0.99 in 1% of studies, the 0.90 that 3 seeds give on average in about 95%). The word
reads the interval's sign, so it errs at most as often as that: where the rows' true measures are
uncorrelated, agree or disagree came out in about 3% of simulated studies. Each row's ratio and key-token
excess have Student's t intervals over its seeds (``row_interval``), not percentiles of the same
replicates; its effective length a range, the rule applied at the ends of each cell's t interval.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from posbench.report.analysis import bootstrap
from posbench.report.analysis.headline import with_interval
from posbench.report.analysis.key_tokens import paired_rows
from posbench.report.analysis.stats import ALPHA
from posbench.report.analysis.tables import completed, far_control, multiples
from posbench.report.analysis.task_frames import effective_lengths
from posbench.report.drawing.document import Heading, Para, Table
from posbench.report.section import SECTIONS, Output, Section

ROWS = Output("measures.csv", "the three measures per study and row, oriented ranks, 95% intervals over seeds")
CORRELATIONS = Output("measures_correlations.csv", "Spearman's rank correlation per study and pair of measures, "
                                                   "95% interval over seeds, the word")
MIN_ROWS = 3
REPLICATES = 2000
RNG_SEED = 0
MEASURES = ("ratio", "key_excess", "effective_length")
NAMES = {"ratio": "ratio on equal context", "key_excess": "key-token excess", "effective_length": "effective length"}
PAIRS = (("ratio", "key_excess"), ("ratio", "effective_length"), ("key_excess", "effective_length"))
AGREE, DISAGREE = "agree", "disagree"


@dataclass(frozen=True)
class RowSeeds:
    """One row of a study, per seed: ``log_ratio`` and ``key_excess`` [S] on the LM seeds both have,
    ``accuracy`` [T, C] of the task seeds on the task's cells (length, condition), ``lengths`` [C]."""

    name: str
    log_ratio: np.ndarray
    key_excess: np.ndarray
    accuracy: np.ndarray
    lengths: np.ndarray

    @property
    def seeds(self) -> int:
        return min(len(self.log_ratio), len(self.accuracy))


def oriented(rows: list[RowSeeds], lm: list[np.ndarray], task: list[np.ndarray], threshold: float) -> np.ndarray:
    """The rows' three measures, higher is better, on the seeds drawn (``lm[i]``, ``task[i]``: index
    arrays [B, S_i] / [B, T_i]): [B, 3, rows]."""
    out = []
    for r, a, b in zip(rows, lm, task):
        acc = r.accuracy[b].mean(1)  # [B, C]: mean accuracy of the task seeds drawn
        out.append(np.stack([-r.log_ratio[a].mean(1), r.key_excess[a].mean(1),
                             effective_lengths(acc, r.lengths, threshold)], 1))
    return np.stack(out, -1)


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rank correlation of ``x`` and ``y`` [B, n] along the last axis (average ranks for
    ties; what scipy.stats.spearmanr gives one pair, for every replicate at once); NaN where either is
    constant."""
    rx, ry = stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1)
    rx, ry = rx - rx.mean(-1, keepdims=True), ry - ry.mean(-1, keepdims=True)
    den = np.sqrt((rx ** 2).sum(-1) * (ry ** 2).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (rx * ry).sum(-1) / den, np.nan)


def word(lo: float, hi: float, seeds: int) -> str:
    """The interval's word: agree above 0, disagree below, else cannot be told (with ``seeds``)."""
    if seeds >= 2 and np.isfinite(lo) and lo > 0:
        return AGREE
    if seeds >= 2 and np.isfinite(hi) and hi < 0:
        return DISAGREE
    return f"cannot be told with {seeds} seed{'s' if seeds != 1 else ''}"


def compare_rows(rows: list[RowSeeds], threshold: float, replicates: int = REPLICATES,
                 rng_seed: int = RNG_SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per row, per pair): each row's measures with their 95% intervals over seeds and oriented ranks
    (1: best); each pair's Spearman correlation, its interval and word (module doc)."""
    rng = np.random.default_rng(rng_seed)
    every = [np.arange(len(r.log_ratio))[None] for r in rows], [np.arange(len(r.accuracy))[None] for r in rows]
    observed = oriented(rows, *every, threshold)[0]  # [3, rows]
    lm = [rng.integers(0, len(r.log_ratio), (replicates, len(r.log_ratio))) for r in rows]
    task = [rng.integers(0, len(r.accuracy), (replicates, len(r.accuracy))) for r in rows]
    drawn = oriented(rows, lm, task, threshold)  # [B, 3, rows]
    seeds = min(r.seeds for r in rows)
    pairs = []
    for a, b in PAIRS:
        i, j = MEASURES.index(a), MEASURES.index(b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", stats.ConstantInputWarning)
            rho = float(stats.spearmanr(observed[i], observed[j]).statistic)
        reps = spearman_rows(drawn[:, i], drawn[:, j])
        kept = reps[np.isfinite(reps)]
        lo, hi = np.percentile(kept, [2.5, 97.5]) if len(kept) >= replicates / 2 else (np.nan, np.nan)
        pairs.append({"measure_a": a, "measure_b": b, "rows": len(rows), "seeds": seeds, "spearman": rho,
                      "spearman_lo": lo, "spearman_hi": hi, "replicates": len(kept),
                      # no correlation on the rows as measured (a measure ties them all): nothing to call agreement
                      "word": word(lo, hi, seeds) if np.isfinite(rho) else word(np.nan, np.nan, seeds)})
    ranks = stats.rankdata(-observed, axis=-1)  # 1: best, ties averaged
    out = []
    for k, r in enumerate(rows):
        row = {"row": r.name, "lm_seeds": len(r.log_ratio), "task_seeds": len(r.accuracy)}
        for m, name in enumerate(MEASURES):
            row[name], row[f"{name}_lo"], row[f"{name}_hi"] = row_interval(r, name, threshold)
            row[f"{name}_rank"] = ranks[m, k]
        row["rank_spread"] = ranks[:, k].max() - ranks[:, k].min()
        out.append(row)
    return pd.DataFrame(out), pd.DataFrame(pairs)


def row_interval(r: RowSeeds, name: str, threshold: float) -> tuple[float, float, float]:
    """One row's measure with its interval over seeds: Student's 95% t interval over the per-seed log ratios
    (back to the ratio) and key-token excesses (bootstrap.seeds_and_text with seeds alone); the effective
    length by its rule applied to the mean accuracy of each cell and to the ends of each cell's 95% t
    interval over the task seeds. That last is a range, not a 95% interval: the cells' intervals are not
    simultaneous, and they leave out the examples' binomial variance (RowSeeds keeps none), so seeds that
    agree in every cell give a single point. NaN ends with one seed. Not the percentile bootstrap of the
    correlations: with 3 seeds its 2.5th and 97.5th percentiles of a mean are the lowest and highest seed
    (each drawn three times with chance 1/27), a range that covers the mean in 75% of normal samples, not 95%."""
    if name == "ratio":
        e = bootstrap.seeds_and_text(r.log_ratio, None, 0)
        return float(np.exp(e.mean)), float(np.exp(e.lo)), float(np.exp(e.hi))
    if name == "key_excess":
        e = bootstrap.seeds_and_text(r.key_excess, None, 0)
        return e.mean, e.lo, e.hi
    acc, n = r.accuracy.mean(0), len(r.accuracy)
    value = float(effective_lengths(acc, r.lengths, threshold))
    if n < 2:
        return value, np.nan, np.nan
    half = stats.t.ppf(1 - ALPHA / 2, n - 1) * r.accuracy.std(0, ddof=1) / np.sqrt(n)
    return (value, float(effective_lengths(acc - half, r.lengths, threshold)),
            float(effective_lengths(acc + half, r.lengths, threshold)))


# -- from the report's records ---------------------------------------------------------------------------------


def study_rows(ctx) -> dict[tuple, list[RowSeeds]]:
    """Per study (protocol, model shape, train_len, task): its rows with all three measures (module doc)."""
    if not ctx.has_lm or ctx.multiple is None or ctx.task_records.empty:
        return {}
    done = completed(ctx.evals)
    ms = [m for m in multiples(done) if m <= ctx.multiple]
    if 1.0 not in ms or len(ms) < 2:
        return {}
    done = done[done["multiple"].isin(ms)]
    key_counts = ctx.key_counts.counts
    tasks = ctx.task_records[ctx.task_records["accuracy"].notna()]
    groups = model_groups(ctx)
    studies: dict[tuple, list[RowSeeds]] = {}
    for cell in paired_rows(done):
        protocol, variant, model, train_len = cell
        lm = _lm_seeds(done, cell, ms, [v for (c, m, _), v in key_counts.items() if c == cell and m == ctx.multiple])
        if lm is None:
            continue
        seeds, log_ratio, excess = lm
        mine = tasks[(tasks["variant"] == variant) & (tasks["model"] == model) & (tasks["train_len"] == train_len)]
        for task, g in mine.groupby("task"):
            accuracy, lengths = _task_seeds(g)
            if accuracy is not None:
                group, bare = groups.get(model, (model, True))
                studies.setdefault((protocol, group, train_len, task), []).append(
                    RowSeeds(variant if bare else f"{variant} ({model})", log_ratio, excess, accuracy, lengths))
    return {k: sorted(v, key=lambda r: r.name) for k, v in sorted(studies.items(), key=lambda kv: tuple(map(str, kv[0])))
            if len(v) >= MIN_ROWS}


def model_groups(ctx) -> dict[str, tuple[str, bool]]:
    """Each model name of the report's runs -> (the name of its study's model, whether its rows are named
    bare). A recurrent or hybrid pattern joins the attention-only model of its shape (d_model, n_layers,
    n_heads in their configs: small_gdn, small_mamba2 -> small), or, with none, the patterns of one shape
    share the shortest of their names; its rows are named with its model (``nope (small_gdn)``). Two
    attention-only models are never joined (their names carry another setting: small@pydocs,
    small|base=500), and where one shape has several, a pattern of it stays alone. A model whose config
    cannot say stays alone, named bare; one name of several shapes (experiment=learned_tasks trains small_gdn
    at the tiny shape and, for one task, the small) stays alone too, its rows named with it unless it is an
    attention-only model."""
    shapes: dict[str, set] = {}
    attention_only: set[str] = set()
    for run_dir, model in zip(ctx.completed["run_dir"], ctx.completed["model"]):
        try:
            m = ctx.configs[run_dir].model
            shapes.setdefault(model, set()).add((int(m.d_model), int(m.n_layers), int(m.n_heads)))
            if all(str(x) == "attention" for x in (m.get("mixers") or ["attention"])):
                attention_only.add(model)
        except Exception:  # noqa: BLE001 - a checkpoint's run or an old config: its own study
            continue
    by_shape: dict[tuple, list[str]] = {}
    out = {}
    for model, of_model in shapes.items():
        if len(of_model) > 1:  # which shape's study it would join depends on its runs' order: none
            out[model] = (model, model in attention_only)
        else:
            by_shape.setdefault(next(iter(of_model)), []).append(model)
    for names in by_shape.values():
        plain = sorted(n for n in names if n in attention_only)
        patterns = sorted(n for n in names if n not in attention_only)
        out.update({model: (model, True) for model in plain})  # each its own setting (small@pydocs, small|base=500)
        if len(plain) > 1:  # a pattern would not know which setting it shares: each stays alone
            out.update({model: (model, False) for model in patterns})
        elif patterns:
            group = plain[0] if plain else min(patterns, key=lambda n: (len(n), n))
            out.update({model: (group, False) for model in patterns})
    return out


def _lm_seeds(done: pd.DataFrame, cell: tuple, ms: list[float], counted: list) -> tuple | None:
    """(seeds, log ratio on equal context [S], key-token excess [S]) on the seeds both have; None without one."""
    protocol, variant, model, train_len = cell
    panel = done[(done["protocol"] == protocol) & (done["model"] == model) & (done["train_len"] == train_len)]
    row = bootstrap.cell_replicates(panel[panel["variant"] == variant], ms, None, None)
    control = bootstrap.cell_replicates(panel[panel["variant"] == far_control(variant)], ms, None, None)
    parts = bootstrap.equal_context_parts(row, control, len(ms) - 1)
    if parts is None or not counted:
        return None
    excess = {s: (c.key.sum() - c.mirror.sum()) / c.tokens.sum() for s, c in counted[0] if c.tokens.sum() > 0}
    seeds = [s for s, y in zip(parts.seeds, parts.y) if s in excess and np.isfinite(y)]
    if not seeds:
        return None
    y = dict(zip(parts.seeds, parts.y))
    return seeds, np.array([y[s] for s in seeds]), np.array([excess[s] for s in seeds])


def _task_seeds(g: pd.DataFrame) -> tuple[np.ndarray | None, np.ndarray]:
    """A row's task records as accuracy per seed [T, C] on the cells (length, condition) every seed has."""
    cells = g.assign(condition=g["condition"].fillna(-1)).groupby(["seed", "length", "condition"])["accuracy"].mean()
    table = cells.unstack(["length", "condition"]).dropna(axis=1)
    if table.empty:
        return None, np.array([])
    return table.to_numpy(float), np.array([L for L, _ in table.columns], dtype=float)


def _frames(ctx) -> dict:
    def compute():
        out = {}
        for study, rows in study_rows(ctx).items():
            out[study] = compare_rows(rows, ctx.options.threshold)
        return out
    return ctx.derived("measures", compute)


STUDY_KEYS = ["protocol", "model", "train_len", "task"]


@SECTIONS.register("measures")
class Measures(Section):
    order = 67
    files = (ROWS, CORRELATIONS)
    # the key-token excess reads the runs' token_losses.npz, which a committed report's records do not keep
    needs_runs, title = True, "The three measures side by side"
    caption = ("Ratio on equal context, key-token excess and task effective length per row, with Spearman's rank "
               "correlation of each pair over seeds.")

    def applies(self, ctx) -> bool:
        return bool(_frames(ctx))

    def build(self, ctx, out) -> list:
        frames = _frames(ctx)
        rows = pd.concat([r.assign(**dict(zip(STUDY_KEYS, s))) for s, (r, _) in frames.items()], ignore_index=True)
        pairs = pd.concat([p.assign(**dict(zip(STUDY_KEYS, s))) for s, (_, p) in frames.items()], ignore_index=True)
        out.csv(ROWS.name, rows[STUDY_KEYS + [c for c in rows.columns if c not in STUDY_KEYS]])
        out.csv(CORRELATIONS.name, pairs[STUDY_KEYS + [c for c in pairs.columns if c not in STUDY_KEYS]])
        longest = f"{ctx.multiple:g}x"
        blocks = [Heading(self.title),
                  Para(f"Per study (protocol, model shape, train_len, task; a recurrent or hybrid model joins the attention "
                       f"rows of its shape, named beside its row), the rows that have all three measures: the ratio on "
                       f"equal context at {longest} (the verdict's statistic; low is good), the key-token excess at "
                       f"{longest} (key-token share minus mirror share, in percentage points; high: the row uses the "
                       f"far context) and the task's effective length at {100 * ctx.options.threshold:.0f}% accuracy "
                       "(long is good). Ranks are oriented so that 1 is best by every measure. Spearman's rank "
                       "correlation of each pair across the rows has a 95% percentile interval over seeds "
                       f"({REPLICATES} replicates, numpy seed {RNG_SEED}: each draws every row's seeds with replacement "
                       "and recomputes the rows' measures and the correlation); **agree** where the interval lies "
                       "above 0, **disagree** where it lies below, **cannot be told** otherwise. The interval covers "
                       "the correlation the rows' means over this many seeds have on average (about 95% of simulated "
                       "studies at 3 seeds), which the seeds' noise pulls towards 0 from the rows' noise-free "
                       "correlation: a weak correlation here can hide a stronger one among the rows' true measures. "
                       "Each row's ratio and key-token excess have 95% Student's t intervals over seeds alone (the main "
                       "table's also cover the text); its effective length a range: the rule applied at the ends of "
                       "each cell's t interval over the task seeds, not simultaneous and without the examples' "
                       "variance, so seeds that agree give one point.")]
        for study, (r, p) in frames.items():
            protocol, model, train_len, task = study
            blocks.append(Para(f"**{task}**, {protocol}, {model}, train_len {train_len}: " + _verdict_words(p, r) + " "
                               + _differ_words(r)))
            blocks.append(Table(_display_pairs(p)))
            blocks.append(Table(_display_rows(r)))
        return blocks


def _verdict_words(p: pd.DataFrame, r: pd.DataFrame) -> str:
    """Each pair's word with its correlation; where a measure ties every row, that there is none."""
    tied = [m for m in MEASURES if r[m].nunique() == 1]
    words = []
    for a, b, w, rho, lo, hi in zip(p["measure_a"], p["measure_b"], p["word"], p["spearman"], p["spearman_lo"],
                                    p["spearman_hi"]):
        why = [NAMES[m] for m in (a, b) if m in tied]
        number = f"rho {rho:.2f}{_span(lo, hi)}" if np.isfinite(rho) else \
            f"no correlation: every row has the same {' and '.join(why) or 'rank'}"
        words.append(f"{NAMES[a]} and {NAMES[b]} **{w}** ({number})")
    return "; ".join(words) + "."


def _span(lo, hi) -> str:
    return f" [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) and np.isfinite(hi) else ""


def _differ_words(r: pd.DataFrame) -> str:
    """The rows whose ranks differ most between the measures."""
    top = r["rank_spread"].max()
    if not top > 0:
        return "Every row has the same rank by all three measures."
    names = ", ".join(f"`{n}`" for n in r.loc[r["rank_spread"] == top, "row"])
    return (f"The ranks differ most for {names}: {top:g} place{'s' if top != 1 else ''} between the best and the worst "
            "rank by the three measures.")


def _display_pairs(p: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"measures": [f"{NAMES[a]} / {NAMES[b]}" for a, b in zip(p["measure_a"], p["measure_b"])],
                         "Spearman [95% over seeds]": [with_interval(v, lo, hi) for v, lo, hi in
                                                       zip(p["spearman"], p["spearman_lo"], p["spearman_hi"])],
                         "rows": p["rows"], "seeds": p["seeds"], "word": p["word"]})


def _display_rows(r: pd.DataFrame) -> pd.DataFrame:
    rank = lambda m: [f"{v:g}" for v in r[f"{m}_rank"]]  # noqa: E731
    return pd.DataFrame({
        "row": r["row"], "seeds (LM / task)": [f"{a} / {b}" for a, b in zip(r["lm_seeds"], r["task_seeds"])],
        NAMES["ratio"]: [with_interval(v, lo, hi, 3) for v, lo, hi in zip(r["ratio"], r["ratio_lo"], r["ratio_hi"])],
        "rank (ratio)": rank("ratio"),
        "key-token excess (pp)": [with_interval(v, lo, hi, 2, 100) for v, lo, hi in
                                  zip(r["key_excess"], r["key_excess_lo"], r["key_excess_hi"])],
        "rank (key)": rank("key_excess"),
        NAMES["effective_length"]: [with_interval(v, lo, hi, 0) for v, lo, hi in
                                    zip(r["effective_length"], r["effective_length_lo"], r["effective_length_hi"])],
        "rank (length)": rank("effective_length"),
    })


__all__ = ["Measures", "RowSeeds", "compare_rows", "effective_lengths", "model_groups", "spearman_rows", "study_rows", "word"]
