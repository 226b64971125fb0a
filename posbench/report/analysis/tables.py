"""The report's tables, all pandas: per-run summary metrics, the main table aggregated over seeds
with intervals and significance marks, the pairwise tests, and their markdown / LaTeX forms.

Summary metrics of one run (per variant and protocol):
    ratio at multiple m   ppl(m x train_len) / ppl(1x)
    extrapolation length  the longest evaluated length L such that every evaluated length up to L
                          has ppl <= (1 + tolerance) x ppl(1x)   (tolerance 5% by default)
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from posbench.core.errors import PosbenchError
from posbench.evaluation.variants.local import WINDOW_CONTROL
from posbench.report.analysis import bootstrap
from posbench.report.analysis.stats import ALPHA, format_p
from posbench.report.analysis.verdicts import (
    UNDECIDED,
    far_context_class,
    interval_verdict,
    qualified_verdict,
)

NOT_DEFINED = "n/d"  # evaluated, and the encoding cannot represent the length (a learned table past its size)
NOT_EVALUATED = "n/e"  # no record (for some seed) at that length on the compared token set
ONE_DOC = "(1 doc)"  # leaving one scored document out turns the sign of the difference to the best
NOT_RESOLVABLE = "n/r"  # a comparison with the best that the seeds there are cannot resolve (bootstrap.compare)
UNRECORDED_SET = "(not recorded)"  # records made before token sets were named
CELL_KEYS = ["protocol", "variant", "model", "train_len"]  # one table row per cell, seeds aggregated
PANEL_KEYS = ["protocol", "model", "train_len"]  # encodings compared within a panel


def fmt_multiple(m: float) -> str:
    return f"{m:g}x"


def multiple_columns(table: pd.DataFrame) -> list[str]:
    """The main table's mean-perplexity columns, "1x", "2x", ... in order."""
    return [c for c in table.columns if c.endswith("x") and c[:-1].replace(".", "").isdigit()]


def completed(evals: pd.DataFrame) -> pd.DataFrame:
    return evals[evals["status"] == "completed"]


def multiples(evals: pd.DataFrame) -> list[float]:
    return sorted(completed(evals)["multiple"].unique())


def evaluated_multiples(evals: pd.DataFrame) -> dict[tuple, set[float]]:
    """Each cell's multiples that every seed of it has a record at (a record that says the encoding
    is not defined there counts: it was evaluated)."""
    done = completed(evals)
    seeds = done.groupby(CELL_KEYS)["seed"].nunique()
    per = done.groupby(CELL_KEYS + ["multiple"])["seed"].nunique()
    out: dict[tuple, set[float]] = {key: set() for key in seeds.index}
    for key, n in per.items():
        if n == seeds[key[:-1]]:
            out[key[:-1]].add(float(key[-1]))
    return out


def verdict_multiple(evals: pd.DataFrame, requested: float | None = None) -> float | None:
    """The multiple the verdicts, the ``<M>x/1x`` column and the rank over lengths are read at:
    ``requested`` (posbench-report --multiple), else the longest multiple every compared row has
    (rows are compared within a panel: the longest of each panel's shared multiples).
    One row's longer evaluation (32x of one seed) must not turn every other row into "not evaluated"
    and cost it its verdict: longer multiples are extra columns for the rows that have them. None
    without records; PosbenchError when ``requested`` was not evaluated."""
    ms = multiples(evals)
    if not ms:
        return None
    if requested is not None:
        if float(requested) not in ms:
            raise PosbenchError(f"--multiple {requested:g} was not evaluated; the multiples there are: "
                                + ", ".join(fmt_multiple(m) for m in ms))
        return float(requested)
    # per panel (rows are compared within one: protocol, model, train_len), the longest multiple all its
    # rows have; the report's is the longest of those. A panel that stops short (a model trained at 4x
    # the length, scored to the same tokens) keeps "n/e" past its own, as before: its rows are not
    # compared with the others, and reading every panel at its shortest would drop 16x from them all
    by_panel: dict[tuple, list[set[float]]] = {}
    for key, have in evaluated_multiples(evals).items():
        by_panel.setdefault(tuple(key[i] for i in (0, 2, 3)), []).append(have)
    shared = [max(common) for sets in by_panel.values() if (common := set.intersection(*sets))]
    return max(shared) if shared else ms[0]


def comparable_records(evals: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(kept, left out): within each panel (protocol, model, train_len) only records scored on one
    token set are compared, the set with the most records (ties: the first name); every other
    record is left out, one row per run x variant x protocol x token set with its lengths."""
    evals = evals.copy()
    evals["token_set"] = evals["token_set"].fillna(UNRECORDED_SET) if "token_set" in evals else UNRECORDED_SET
    counts = evals.groupby(PANEL_KEYS + ["token_set"]).size().rename("n").reset_index()
    counts = counts.sort_values(PANEL_KEYS + ["n", "token_set"], ascending=[True] * len(PANEL_KEYS) + [False, True])
    chosen = counts.drop_duplicates(PANEL_KEYS)[PANEL_KEYS + ["token_set"]].rename(columns={"token_set": "compared_set"})
    evals = evals.merge(chosen, on=PANEL_KEYS, how="left")
    same = evals["token_set"] == evals["compared_set"]
    out = evals[~same]
    left = (out.groupby(["run_id", "variant", "protocol", "token_set", "compared_set"])["length"]
            .apply(lambda x: ", ".join(str(int(v)) for v in sorted(set(x)))).rename("lengths").reset_index())
    return evals[same].drop(columns="compared_set"), left


def cell_notes(evals: pd.DataFrame) -> dict[tuple, str]:
    """Why a (cell, multiple) has no mean: ``n/d`` where a record says the encoding is not defined
    there, ``n/e`` where some seed of the cell has no record at that multiple."""
    done = completed(evals)
    seeds = done.groupby(CELL_KEYS)["seed"].nunique()
    notes = {}
    for key, g in done.groupby(CELL_KEYS + ["multiple"]):
        if g["ppl"].isna().any() and "reason" in g and g["reason"].notna().any():
            notes[key] = NOT_DEFINED
        elif g["seed"].nunique() < seeds[key[:-1]]:
            notes[key] = NOT_EVALUATED
    return notes


def per_seed_ppl(evals: pd.DataFrame) -> pd.DataFrame:
    """Index CELL_KEYS + seed, one column of perplexity per multiple (NaN: not defined)."""
    done = completed(evals)
    # unstack, not pivot_table(dropna=False): that would invent every combination of the index levels
    wide = done.groupby(CELL_KEYS + ["seed", "multiple"])["ppl"].first().unstack("multiple")
    return wide.reindex(columns=multiples(evals)).astype(float)


def extrapolation_length(lengths, ppls, tolerance: float) -> float:
    """Longest length reached from 1x with every perplexity on the way within tolerance of 1x."""
    ok = math.nan
    base = ppls[0]
    if base is None or not np.isfinite(base):
        return ok
    for L, p in zip(lengths, ppls):
        if not np.isfinite(p) or p > (1 + tolerance) * base:
            break
        ok = L
    return ok


def run_summary(evals: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """One row per run x variant x protocol: perplexity and ratio to 1x at each multiple, and the
    extrapolation length."""
    wide = per_seed_ppl(evals)
    ms = list(wide.columns)
    rows = []
    for key, ppl in wide.iterrows():
        row = dict(zip(CELL_KEYS + ["seed"], key))
        values = ppl.to_numpy(dtype=float)
        lengths = [round(key[3] * m) for m in ms]
        for m, v in zip(ms, values):
            row[f"ppl@{fmt_multiple(m)}"] = v
        for m, v in zip(ms, values):
            row[f"ratio@{fmt_multiple(m)}"] = v / values[0] if 1.0 in ms else math.nan
        row["extrapolation_len"] = extrapolation_length(lengths, values, tolerance) if ms and ms[0] == 1.0 else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def window_stride(g: pd.DataFrame) -> str:
    """How far a cell's windows advance, from its records' ``min_context`` (the context every scored
    token has: length - stride): "L" (non-overlapping), "L/2" (sliding's default, half of each
    length), a number of tokens (a stride set with eval.stride or eval.press_stride), or "" where the
    records do not say or their strides differ."""
    if "min_context" not in g:
        return ""
    pairs = [(int(L), int(L - c)) for L, c in zip(g["length"], g["min_context"]) if pd.notna(c)]
    if not pairs:
        return ""
    if all(stride == L for L, stride in pairs):
        return "L"
    if all(2 * stride == L for L, stride in pairs):
        return "L/2"
    strides = {stride for _, stride in pairs}
    return str(strides.pop()) if len(strides) == 1 else ""


def main_table(evals: pd.DataFrame, tolerance: float, token_sets: dict | None = None,
               replicates: int = bootstrap.REPLICATES, multiple: float | None = None) -> pd.DataFrame:
    """One row per cell (protocol, variant, model, train_len), aggregated over seeds, with
    intervals over text and seeds (posbench/report/analysis/bootstrap.py; ``token_sets``: each token set's
    ``doc_tokens``; without them, or for records without ``doc_nats``, over seeds alone).

    Columns: ``seeds``, ``interval`` (what the intervals cover), ``stride`` (``window_stride``), ``windowed`` (an evaluation-time
    window: a control, never in the same verdict list as the unwindowed rows); for each multiple
    ``<m>x`` (geometric mean ppl over seeds), ``<m>x_lo`` / ``<m>x_hi`` (95% interval), ``<m>x_p_vs_best``
    (against the lowest mean of the column in the same panel), ``<m>x_test`` (which test:
    bootstrap.compare), ``<m>x_unresolved`` (why there is no p-value, e.g. "not resolvable with 1
    seed") and ``<m>x_p_holm`` (Holm-adjusted over the panel's comparisons), ``<m>x_best``;
    ``<M>x/1x`` (the longest multiple's ratio, descriptive) with ``_lo`` / ``_hi`` and ``verdict`` (flat / mild /
    broken when the interval lies inside one class, else undecided); ``far_gain`` with ``_lo`` /
    ``_hi`` (the longest length's perplexity with a window of train_len keys over without it, from
    the row's ``+swaL`` control: above 1, the row uses context past train_len) and ``far_context``
    (verdicts.far_context_class); ``equal_ctx`` with ``_lo`` / ``_hi``, the verdict's statistic on equal
    context where the row has a window control (bootstrap.equal_context_stats: then ``verdict`` is read
    from it, ``verdict_16x_1x`` keeps the ratio's class, ``verdict_basis`` says which);
    ``label`` (the verdict, a flat one qualified by far_context);
    ``mean_log_ppl`` (mean log-perplexity over the evaluated lengths) with ``_lo`` / ``_hi``;
    ``rank_1x`` (by the 1x perplexity) and ``rank_mean_log_ppl`` within the panel, 1 the lowest, tied
    where the printed values are equal (``rank_by_value``); ``extrapolation_len`` (from the mean curve) and
    ``extrapolation_len_min`` (worst seed).

    ``M``, the multiple of the verdict, the ratio, the far-context columns, the extrapolation length
    and the mean log-perplexity, is ``verdict_multiple(evals, multiple)``: the longest multiple every
    row has unless one is asked for; a longer multiple some rows have is a column of its own (mean,
    interval, test against the best) and nothing else."""
    all_ms = multiples(evals)
    longest = verdict_multiple(evals, multiple)
    ms = [m for m in all_ms if longest is None or m <= longest]  # what the verdict and the ranks read
    summary = run_summary(evals if ms == all_ms else evals[evals["multiple"] <= longest], tolerance)
    notes = cell_notes(evals)
    done = completed(evals)
    token_sets = token_sets or {}
    rows, reps, reps_all = [], {}, {}
    for panel, pg in done.groupby(PANEL_KEYS, sort=True):
        doc_tokens, draws = bootstrap.panel_text(pg, token_sets, replicates)
        for variant, g in pg.groupby("variant", sort=True):
            cell = dict(zip(PANEL_KEYS, panel), variant=variant)
            key = tuple(cell[k] for k in CELL_KEYS)
            c_all = bootstrap.cell_replicates(g, all_ms, doc_tokens, draws)
            c = c_all if ms == all_ms else bootstrap.cell_replicates(g[g["multiple"] <= longest], ms, doc_tokens, draws)
            reps[key], reps_all[key] = c, c_all
            row = {k: cell[k] for k in CELL_KEYS}
            row["seeds"] = g["seed"].nunique()
            row["interval"] = interval_kind(c)
            row["windowed"] = bool(g["windowed"].fillna(False).any()) if "windowed" in g else False
            row["stride"] = window_stride(g)
            means = []
            for k, m in enumerate(all_ms):
                col = fmt_multiple(m)
                mean, lo, hi = bootstrap.ppl_stats(c_all, k)
                means += [mean] if m in ms else []
                row[col], row[f"{col}_lo"], row[f"{col}_hi"] = mean, lo, hi
                row[f"{col}_note"] = "" if not np.isnan(mean) else notes.get((*key, m), NOT_EVALUATED)
            if len(ms) > 1 and ms[0] == 1.0:
                ratio = f"{fmt_multiple(ms[-1])}/1x"
                row[ratio], row[f"{ratio}_lo"], row[f"{ratio}_hi"] = bootstrap.ratio_stats(c, len(ms) - 1)
                row["verdict"] = interval_verdict(row[f"{ratio}_lo"], row[f"{ratio}_hi"], row[ratio], tolerance)
                row["verdict_16x_1x"] = row["verdict"]  # descriptive: _far_context reads the verdict on equal context
                lengths = [round(key[3] * m) for m in ms]
                row["extrapolation_len"] = extrapolation_length(lengths, np.array(means), tolerance)
                row["extrapolation_len_min"] = summary.loc[
                    (summary[CELL_KEYS] == pd.Series(key, index=CELL_KEYS)).all(axis=1), "extrapolation_len"].min()
            row["mean_log_ppl"], row["mean_log_ppl_lo"], row["mean_log_ppl_hi"] = bootstrap.mean_log_stats(c)
            rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    # ranks among the unwindowed rows (the windowed ones among themselves), by the values as printed
    # (rank_by_value): whether two rows differ is the tests' to say (the ≈ marks, pairs.csv), as at every length
    table["rank_1x"] = math.nan
    table["rank_mean_log_ppl"] = math.nan
    for _, idx in table.groupby(PANEL_KEYS + ["windowed"]).groups.items():
        if 1.0 in ms:
            table.loc[idx, "rank_1x"] = rank_by_value(table.loc[idx, "1x"], PPL_DIGITS)
        table.loc[idx, "rank_mean_log_ppl"] = rank_by_value(table.loc[idx, "mean_log_ppl"], MEAN_LOG_DIGITS)
    _far_context(table, reps, ms, tolerance)
    _mark_best(table, reps_all, all_ms)
    return table


MEAN_LOG_DIGITS = 3  # the decimals the mean log-perplexity is printed with (display_table)
PPL_DIGITS = 2  # ... and a perplexity


def rank_by_value(values, digits: int) -> list[float]:
    """Competition ranks ("1, 2, 2, 4"), lowest value first: rank 1 is the lowest (the best perplexity),
    rows equal once rounded to ``digits`` decimals, as printed, share a rank, and the next rank skips
    as many places as shared the one before. NaN for a row without a value. Ties are read at the
    printed precision, not from the tests: a rank orders what the reader sees; whether two rows
    differ is the ≈ marks' and pairs.csv's to say."""
    shown = [float(f"{v:.{digits}f}") if pd.notna(v) and np.isfinite(v) else math.nan for v in values]
    return [math.nan if math.isnan(v) else float(1 + sum(1 for o in shown if o < v)) for v in shown]


def interval_kind(c: bootstrap.CellReplicates) -> str:
    """What a cell's intervals cover: text and seeds, the text of one seed, or seeds alone."""
    if not c.text:
        return bootstrap.SEEDS_ONLY
    return bootstrap.BOTH if len(c.seeds) > 1 else bootstrap.TEXT_ONLY


def far_control(variant: str) -> str:
    """The name of a row's far-context control: the same weights and row with a sliding window of
    train_len keys in every layer (posbench/evaluation/variants/local.py)."""
    return variant + WINDOW_CONTROL


def _far_context(table: pd.DataFrame, reps: dict, ms: list[float], tolerance: float) -> None:
    """Fill, for every unwindowed row whose window control was scored at the longest multiple,
    ``far_gain`` (and its interval: the window control over the row), ``far_context``, the statistic on
    equal context ``equal_ctx`` (and its interval: bootstrap.equal_context_stats) and ``verdict`` read
    from it (``verdict_basis`` says which: EQUAL_CONTEXT, or ONLY_16X_1X where the row has no window
    control and its verdict stays the M/1x one, on unequal context: ``only_ratio``); then ``label``."""
    table["far_gain"], table["far_gain_lo"], table["far_gain_hi"] = math.nan, math.nan, math.nan
    table["equal_ctx"], table["equal_ctx_lo"], table["equal_ctx_hi"] = math.nan, math.nan, math.nan
    table["far_context"] = ""
    table["verdict_basis"] = ""
    table["verdict_seeds"] = table["seeds"] if "seeds" in table else 0
    table["verdict_note"] = ""
    key = lambda i: tuple(table.loc[i, k] for k in CELL_KEYS)  # noqa: E731
    names = set(zip(*(table[k] for k in CELL_KEYS)))
    if ms and ms[-1] > 1:
        for i in table.index[~table["windowed"]]:
            k = key(i)
            control = (k[0], far_control(k[1]), *k[2:])
            if control not in names:
                table.loc[i, "far_context"] = NO_CONTROL
                table.loc[i, "verdict_basis"] = only_ratio(ms[-1]) if 1.0 in ms else ""
                continue
            gain = bootstrap.pair_ratio_stats(reps[control], reps[k], len(ms) - 1)
            table.loc[i, ["far_gain", "far_gain_lo", "far_gain_hi"]] = gain
            table.loc[i, "far_context"] = far_context_class(gain[1], gain[2])
            if 1.0 in ms:
                parts = bootstrap.equal_context_parts(reps[k], reps[control], len(ms) - 1)
                eq = bootstrap.equal_context_stats(reps[k], reps[control], len(ms) - 1)
                table.loc[i, ["equal_ctx", "equal_ctx_lo", "equal_ctx_hi"]] = eq
                if pd.notna(eq[0]):
                    table.loc[i, "verdict"] = interval_verdict(eq[1], eq[2], eq[0], tolerance)
                    table.loc[i, "verdict_basis"] = EQUAL_CONTEXT
                    table.loc[i, "verdict_seeds"] = len(parts.seeds)
                    table.loc[i, "verdict_note"] = seeds_note(reps[k].seeds, parts, table.loc[i, "verdict"],
                                                              eq[0], tolerance, ms[-1])
    table["label"] = [qualified_verdict(r.get("verdict", ""), r["far_context"]) for _, r in table.iterrows()]


def seeds_note(row_seeds, parts: bootstrap.Parts, word: str, mean: float, tolerance: float, longest: float) -> str:
    """What a reader must know about the seeds a verdict on equal context rests on: which seeds, where
    the row has seeds its window control lacks; with 2 seeds and an undecided verdict, that the seed
    term's t has 1 degree of freedom and what a third seed would need to show (the range of its ratio
    on equal context for which three seeds would decide the class the two point to)."""
    notes = []
    if len(parts.seeds) < len(row_seeds):
        missing = [s for s in row_seeds if s not in parts.seeds]
        notes.append(f"verdict on seeds {', '.join(map(str, parts.seeds))} of {len(row_seeds)} (seed"
                     f"{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} without a window control at "
                     f"{fmt_multiple(longest)})")
    if len(parts.seeds) == 2 and word == UNDECIDED and np.isfinite(mean):
        target = interval_verdict(mean, mean, mean, tolerance)
        found = bootstrap.third_seed_range(
            parts, lambda lo, hi: interval_verdict(math.exp(lo), math.exp(hi), math.nan, tolerance) == target)
        notes.append("2 seeds: the seed term's t has 1 degree of freedom (t = 12.7 at 95%); "
                     + (f"a third seed reading {bootstrap.range_words(math.exp(found[0]), math.exp(found[1]))} on "
                        f"equal context would make it {target}" if found else f"no third seed alone would make it {target}"))
    return "; ".join(notes)


NO_CONTROL = "no window control"
EQUAL_CONTEXT = "equal context"  # the verdict read from ppl(M) / min(ppl(1x), its window control's ppl(M))


def only_ratio(longest: float) -> str:
    """The verdict basis of a row without a window control: its ratio to 1x alone, on unequal context."""
    return f"{fmt_multiple(longest)}/1x only (no window control: unequal context)"


def _mark_best(table: pd.DataFrame, reps: dict, ms: list[float]) -> None:
    """Fill ``<m>x_best``, ``<m>x_p_vs_best`` (each unwindowed cell against the best unwindowed cell of
    its column in its panel; bootstrap.compare: documents paired within one model's rows, seeds
    between models), ``<m>x_test``, ``<m>x_unresolved`` and ``<m>x_p_holm`` (Holm over all of a
    panel's comparisons that have a p-value, every multiple). Windowed rows (controls) are neither
    best nor tested."""
    for m in ms:
        col = fmt_multiple(m)
        table[f"{col}_p_vs_best"] = math.nan
        table[f"{col}_p_holm"] = math.nan
        table[f"{col}_best"] = False
        table[f"{col}_test"] = ""
        table[f"{col}_unresolved"] = ""
        table[f"{col}_loo"] = ""  # the difference to the best with each document left out (range of the ratio)
        table[f"{col}_doc_share"] = math.nan
        table[f"{col}_one_doc"] = False
    key = lambda i: tuple(table.loc[i, k] for k in CELL_KEYS)  # noqa: E731
    # the family: the unwindowed rows of a panel against their best (windowed rows are controls, not contenders)
    for _, idx in table[~table["windowed"]].groupby(PANEL_KEYS).groups.items():
        family = []  # (row index, column, p)
        for k, m in enumerate(ms):
            col = fmt_multiple(m)
            sub = table.loc[idx]
            if sub[col].notna().sum() == 0:
                continue
            best = sub[col].idxmin()
            table.loc[best, f"{col}_best"] = True
            for i in idx:
                if i != best and pd.notna(table.loc[i, col]):
                    result = bootstrap.compare(reps[key(i)], reps[key(best)], k)
                    table.loc[i, f"{col}_test"] = result.test
                    table.loc[i, f"{col}_unresolved"] = result.note
                    if np.isfinite(result.loo_lo):
                        table.loc[i, f"{col}_loo"] = f"{math.exp(result.loo_lo):.4f} to {math.exp(result.loo_hi):.4f}"
                        table.loc[i, f"{col}_doc_share"] = result.doc_share
                        table.loc[i, f"{col}_one_doc"] = result.one_document
                    if np.isfinite(result.p):
                        family.append((i, col, result.p))
        for (i, col, p), adjusted in zip(family, bootstrap.holm([p for *_, p in family])):
            table.loc[i, f"{col}_p_vs_best"] = p
            table.loc[i, f"{col}_p_holm"] = adjusted


def comparisons(table: pd.DataFrame) -> pd.DataFrame:
    """The pre-declared comparisons (``pairs.csv``): every row of a panel against the best (lowest
    mean) of each column, with the raw and Holm-adjusted p-values (as the report prints them: "< 0.001"
    below 0.001, where the t tail of a few seeds' variance is no probability the data can support)
    and the correction named, and how much one document carries: the ratio's range with each
    document left out, the largest document's share of the difference, and whether one document's
    removal turns its sign (bootstrap.Comparison)."""
    rows = []
    for panel, sub in table.groupby(PANEL_KEYS, sort=True):
        family = int(sum(sub[f"{c}_p_vs_best"].notna().sum() for c in multiple_columns(sub)))
        for col in multiple_columns(sub):
            best = sub[sub[f"{col}_best"]]
            if best.empty:
                continue
            b = best.iloc[0]
            tested = sub[sub[f"{col}_p_vs_best"].notna() | (sub.get(f"{col}_unresolved", "") != "")]
            for _, r in tested.iterrows():
                rows.append({**dict(zip(PANEL_KEYS, panel)), "multiple": float(col[:-1]), "a": r["variant"],
                             "b (best)": b["variant"], "seeds": int(r["seeds"]), "interval": r["interval"],
                             "ppl_a": r[col], "ppl_b": b[col], "ppl_ratio_a_over_b": r[col] / b[col],
                             "test": r.get(f"{col}_test", ""), "not_resolvable": r.get(f"{col}_unresolved", ""),
                             "p_value": format_p(r[f"{col}_p_vs_best"], 3), "p_holm": format_p(r[f"{col}_p_holm"], 3),
                             "significant": bool(r[f"{col}_p_holm"] < ALPHA),
                             "ratio_leave_one_document_out": r.get(f"{col}_loo", ""),
                             "largest_document_share": r.get(f"{col}_doc_share", math.nan),
                             "one_document_decides_sign": bool(r.get(f"{col}_one_doc", False)),
                             "correction": f"Holm over the {family} comparisons of this panel (each row against the "
                                           "best of each column)"})
    return pd.DataFrame(rows)


def display_table(table: pd.DataFrame, markdown: bool = True) -> pd.DataFrame:
    """The main table as text cells: mean [95% interval], **best** of each column in bold, ``≈`` on
    cells not significantly different from it (Holm-adjusted) and ``n/r`` where the comparison is
    not resolvable with the seeds there are; the ratio with its interval and verdict (a flat one
    qualified by its far-context use), the window control's ratio to the row at the longest length;
    the mean log-perplexity over lengths with the row's rank in its panel (1 the lowest, tied where
    the printed values are equal: ``rank_by_value``)."""
    ms = multiple_columns(table)
    out = table[CELL_KEYS + ["seeds"]].copy()
    bold = (lambda s: f"**{s}**") if markdown else (lambda s: f"\\textbf{{{s}}}")
    approx = " ≈" if markdown else " $\\approx$"
    span = lambda r, c, f: (f" [{r[f'{c}_lo']:{f}}, {r[f'{c}_hi']:{f}}]"  # noqa: E731
                            if pd.notna(r.get(f"{c}_lo")) and pd.notna(r.get(f"{c}_hi")) else "")
    for col in ms:
        cells = []
        for _, r in table.iterrows():
            if pd.isna(r[col]):
                cells.append(r.get(f"{col}_note") or NOT_EVALUATED)
                continue
            s = f"{r[col]:.2f}" + span(r, col, ".2f")
            if r.get(f"{col}_best"):
                s = bold(s)
            elif pd.notna(r.get(f"{col}_p_holm")) and r[f"{col}_p_holm"] >= ALPHA:
                s += approx
            elif r.get(f"{col}_unresolved"):
                s += f" {NOT_RESOLVABLE}"
            if r.get(f"{col}_one_doc"):
                s += f" {ONE_DOC}"
            cells.append(s)
        out[col] = cells
    for col in [c for c in table.columns if c.endswith("/1x")]:
        longest = col.split("/")[0]
        equal = "equal_ctx" in table and table["equal_ctx"].notna().any()
        # the ratio on its own where a verdict on equal context stands beside it; else the verdict after it
        out[col] = [(r.get(f"{longest}_note") or NOT_EVALUATED) if pd.isna(r[col])
                    else f"{r[col]:.2f}{span(r, col, '.2f')}" + ("" if equal and pd.notna(r.get("equal_ctx"))
                                                               else f" {r.get('label') or r['verdict']}")
                    for _, r in table.iterrows()]
        if equal:
            out[f"{longest} on equal context"] = [
                "" if pd.isna(r.get("equal_ctx")) else f"{r['equal_ctx']:.2f}{span(r, 'equal_ctx', '.2f')} {r.get('label') or r['verdict']}"
                for _, r in table.iterrows()]
        if "far_gain" in table and table["far_gain"].notna().any():
            out[f"window control / full at {longest}"] = [
                "" if pd.isna(r["far_gain"]) else f"{r['far_gain']:.3f}{span(r, 'far_gain', '.3f')}"
                for _, r in table.iterrows()]
    if "mean_log_ppl" in table:
        out["mean log-ppl (rank over lengths)"] = ["-" if pd.isna(r["mean_log_ppl"]) else
                                      f"{r['mean_log_ppl']:.{MEAN_LOG_DIGITS}f}{span(r, 'mean_log_ppl', f'.{MEAN_LOG_DIGITS}f')} ({int(r['rank_mean_log_ppl'])})"
                                      for _, r in table.iterrows()]
    if "extrapolation_len" in table:
        out["extrap. len"] = ["-" if pd.isna(v) else f"{int(v)}" for v in table["extrapolation_len"]]
    return out


def tex_text(text: str) -> str:
    """Text for a LaTeX table cell: ``_`` escaped, and ``|`` (a model label ``small|base=500``) as
    ``\\textbar{}``, which the default font encoding would print as a dash."""
    return text.replace("_", "\\_").replace("|", "\\textbar{}")


def latex_table(table: pd.DataFrame) -> str:
    shown = display_table(table, markdown=False)
    shown.columns = [tex_text(str(c)) for c in shown.columns]
    for col in ("variant", "protocol", "model"):
        shown[col] = shown[col].map(tex_text)
    return shown.to_latex(index=False, escape=False, column_format="l" * len(CELL_KEYS) + "r" * (len(shown.columns) - len(CELL_KEYS)))


PAPER_COLUMNS = 7  # a table a two-column paper can print


def paper_table(table: pd.DataFrame, ratio: str | None) -> str:
    """The main table for a paper (``table_paper.tex``): booktabs, at most ``PAPER_COLUMNS`` columns, one
    row per encoding without its controls on the first protocol: 1x perplexity, the longest length's, the
    ratio, the ratio on equal context (where the report has the window control) and the verdict word, each
    with its 95% interval as the report prints it; a ``setting`` column (model, train_len) where the table
    holds more than one. The full table stays in table.tex."""
    rows = table[~table["windowed"].astype(bool)]
    if rows.empty or not ratio:
        return "% no rows to print\n"
    rows = rows[rows["protocol"] == rows["protocol"].iloc[0]]
    longest = ratio.split("/")[0]
    equal = "equal_ctx" in rows and rows["equal_ctx"].notna().any()

    def cell(r, col, digits=2):
        if pd.isna(r.get(col)):  # why there is no number (n/d: not defined past its table; n/e: not evaluated)
            note = r.get(f"{longest}_note") if col != "1x" else None
            return note if isinstance(note, str) else ""
        lo, hi = r.get(f"{col}_lo"), r.get(f"{col}_hi")
        interval = f" [{lo:.{digits}f}, {hi:.{digits}f}]" if pd.notna(lo) and pd.notna(hi) else ""
        return f"{r[col]:.{digits}f}{interval}"

    out = pd.DataFrame({"encoding": rows["variant"].astype(str)})
    if rows[["model", "train_len"]].drop_duplicates().shape[0] > 1:
        out["setting"] = [f"{m}, {int(t)}" for m, t in zip(rows["model"], rows["train_len"])]
    out["1x ppl"] = [cell(r, "1x") for _, r in rows.iterrows()]
    out[f"{longest} ppl"] = [cell(r, longest) if longest in rows else "" for _, r in rows.iterrows()]
    out[ratio] = [cell(r, ratio) for _, r in rows.iterrows()]
    if equal:
        out[f"{longest}, equal context"] = [cell(r, "equal_ctx") for _, r in rows.iterrows()]
    out["verdict"] = [str(r.get("verdict")) if isinstance(r.get("verdict"), str) else "" for _, r in rows.iterrows()]
    out = out.iloc[:, :PAPER_COLUMNS]
    out.columns = [tex_text(str(c)) for c in out.columns]
    out = out.map(lambda v: tex_text(str(v)))
    source = f"% posbench: the main table at {longest} ({rows['protocol'].iloc[0]} windows; 95% intervals); needs \\usepackage{{booktabs}}\n"
    return source + out.to_latex(index=False, escape=False, column_format="l" * (1 + ("setting" in out.columns))
                                 + "r" * (len(out.columns) - 1 - ("setting" in out.columns)))


def row_caveats(variants) -> list[str]:
    """What a reader must know about some rows before comparing them, for the rows present: each a
    sentence, for the table's legend and the decision guide."""
    names = [str(v) for v in variants]
    notes = []
    if any("+floorlog" in v for v in names):
        notes.append("`+floorlog` is not the identity at 1x: Llama 4's floor-log temperature scales the queries of "
                     "positions past floor_scale = train_len - 1, so the last position of a train_len window is "
                     "scaled by 1 + 0.1 ln 2 = 1.069; its 1x column is not the plain model's.")
    if any(v.startswith("cope+") and ("+logn" in v or "+floorlog" in v) for v in names):
        notes.append("On `cope` the row temperatures (`+logn`, `+floorlog`) scale the queries that CoPE's gates "
                     "and counted positions also read: they change those as well as the softmax.")
    if any(re.search(r"\+sink\d+$", v) for v in names):
        notes.append("`+swa…+sink<k>` reads each of the first k tokens at its true distance (up to the longest length "
                     "scored), where StreamingLLM moves them into the cache, within train_len of every query: a rotary "
                     "row meets distances it never saw there, so its loss is not StreamingLLM's; `+streaming` is "
                     "StreamingLLM's own protocol (RoPE rows, with their sink logit or SSMax's temperature).")
    if any("longrope" in v for v in names):
        notes.append("LongRoPE's factors were searched on the model they are evaluated on (its training text, "
                     "posbench/attention/longrope.py), an advantage no other zero-shot row has.")
    return notes
