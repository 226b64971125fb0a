"""The report's tables, all pandas: per-run summary metrics, the main table aggregated over seeds
with intervals and significance marks, the pairwise tests, and their markdown / LaTeX forms.

Summary metrics of one run (per variant and protocol):
    ratio at multiple m   ppl(m x train_len) / ppl(1x)
    extrapolation length  the longest evaluated length L such that every evaluated length up to L
                          has ppl <= (1 + tolerance) x ppl(1x)   (tolerance 5% by default)
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from posbench.report.stats import ALPHA, ci95_halfwidth, paired_pvalue

NOT_DEFINED = "n/d"  # evaluated, and the encoding cannot represent the length (a learned table past its size)
NOT_EVALUATED = "n/e"  # no record (for some seed) at that length on the compared token set
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


def main_table(evals: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """One row per cell (protocol, variant, model, train_len), aggregated over seeds.

    Columns: ``seeds``; for each multiple ``<m>x`` (mean ppl), ``<m>x_std``, ``<m>x_ci95`` (half
    width of the 95% t-interval) and ``<m>x_p_vs_best`` (paired t-test against the lowest mean of
    the column in the same panel; NaN for the best itself or without shared seeds);
    ``<M>x/1x`` (mean over seeds of the longest multiple's ratio) with its ``_ci95``; and
    ``extrapolation_len`` (from the mean curve) and ``extrapolation_len_min`` (worst seed).
    """
    summary = run_summary(evals, tolerance)
    ms = multiples(evals)
    wide = per_seed_ppl(evals)
    notes = cell_notes(evals)
    rows = []
    for cell, g in summary.groupby(CELL_KEYS, sort=True):
        row = dict(zip(CELL_KEYS, cell))
        row["seeds"] = g["seed"].nunique()
        means = []
        for m in ms:
            v = g[f"ppl@{fmt_multiple(m)}"].to_numpy(dtype=float)
            mean = float(np.mean(v)) if not np.isnan(v).any() else math.nan
            means.append(mean)
            row[fmt_multiple(m)] = mean
            row[f"{fmt_multiple(m)}_note"] = "" if not np.isnan(mean) else notes.get((*cell, m), NOT_EVALUATED)
            row[f"{fmt_multiple(m)}_std"] = float(np.std(v, ddof=1)) if len(v) > 1 and not np.isnan(mean) else math.nan
            row[f"{fmt_multiple(m)}_ci95"] = ci95_halfwidth(v) if not np.isnan(mean) else math.nan
        if len(ms) > 1 and ms[0] == 1.0:
            ratio_col = f"ratio@{fmt_multiple(ms[-1])}"
            v = g[ratio_col].to_numpy(dtype=float)
            row[f"{fmt_multiple(ms[-1])}/1x"] = float(np.mean(v)) if not np.isnan(v).any() else math.nan
            row[f"{fmt_multiple(ms[-1])}/1x_ci95"] = ci95_halfwidth(v)
            lengths = [round(cell[3] * m) for m in ms]
            row["extrapolation_len"] = extrapolation_length(lengths, np.array(means), tolerance)
            row["extrapolation_len_min"] = g["extrapolation_len"].min()
        rows.append(row)
    table = pd.DataFrame(rows)
    _mark_best(table, wide, ms)
    return table


def _mark_best(table: pd.DataFrame, wide: pd.DataFrame, ms: list[float]) -> None:
    """Fill ``<m>x_p_vs_best``: each cell's paired test against the best cell of its panel."""
    for m in ms:
        col = fmt_multiple(m)
        table[f"{col}_p_vs_best"] = math.nan
        table[f"{col}_best"] = False
        for _, idx in table.groupby(PANEL_KEYS).groups.items():
            sub = table.loc[idx]
            if sub[col].notna().sum() == 0:
                continue
            best = sub[col].idxmin()
            table.loc[best, f"{col}_best"] = True
            best_ppl = _seed_series(wide, table.loc[best], m)
            for i in idx:
                if i != best and pd.notna(table.loc[i, col]):
                    a, b = _align(_seed_series(wide, table.loc[i], m), best_ppl)
                    table.loc[i, f"{col}_p_vs_best"] = paired_pvalue(a, b)


def _seed_series(wide: pd.DataFrame, row: pd.Series, m: float) -> pd.Series:
    return wide.loc[tuple(row[k] for k in CELL_KEYS)][m]


def _align(a: pd.Series, b: pd.Series):
    common = a.index.intersection(b.index)
    return a.loc[common].to_numpy(dtype=float), b.loc[common].to_numpy(dtype=float)


def pairwise_tests(evals: pd.DataFrame) -> pd.DataFrame:
    """Every pair of variants in a panel, at every multiple, over their shared seeds: the mean
    ratio of perplexities (geometric over seeds) and the paired t-test's p-value."""
    wide = per_seed_ppl(evals)
    rows = []
    for panel, g in wide.groupby(level=PANEL_KEYS):
        variants = sorted(g.index.get_level_values("variant").unique())
        for a, b in itertools.combinations(variants, 2):
            ga = g.xs(a, level="variant").droplevel(PANEL_KEYS)
            gb = g.xs(b, level="variant").droplevel(PANEL_KEYS)
            for m in wide.columns:
                x, y = _align(ga[m], gb[m])
                ok = ~(np.isnan(x) | np.isnan(y))
                if not ok.any():
                    continue
                p = paired_pvalue(x, y)
                rows.append({**dict(zip(PANEL_KEYS, panel)), "multiple": m, "a": a, "b": b, "seeds": int(ok.sum()),
                             "ppl_ratio_a_over_b": float(np.exp(np.mean(np.log(x[ok]) - np.log(y[ok])))),
                             "p_value": p, "significant": bool(p < ALPHA)})
    return pd.DataFrame(rows)


def display_table(table: pd.DataFrame, markdown: bool = True) -> pd.DataFrame:
    """The main table as text cells: mean (± 95% half-width), **best** of each column in bold and
    ``≈`` on cells not significantly different from it."""
    ms = multiple_columns(table)
    out = table[CELL_KEYS + ["seeds"]].copy()
    bold = (lambda s: f"**{s}**") if markdown else (lambda s: f"\\textbf{{{s}}}")
    pm = "±" if markdown else "$\\pm$"
    approx = " ≈" if markdown else " $\\approx$"
    for col in ms:
        cells = []
        for _, r in table.iterrows():
            if pd.isna(r[col]):
                cells.append(r.get(f"{col}_note") or NOT_EVALUATED)
                continue
            s = f"{r[col]:.2f}"
            if pd.notna(r.get(f"{col}_ci95")):
                s += f" {pm} {r[f'{col}_ci95']:.2f}"
            if r.get(f"{col}_best"):
                s = bold(s)
            elif pd.notna(r.get(f"{col}_p_vs_best")) and r[f"{col}_p_vs_best"] >= ALPHA:
                s += approx
            cells.append(s)
        out[col] = cells
    ratio = [c for c in table.columns if c.endswith("/1x")]
    for col in ratio:
        longest = col.split("/")[0]
        out[col] = [(r.get(f"{longest}_note") or NOT_EVALUATED) if pd.isna(r[col]) else f"{r[col]:.2f}" for _, r in table.iterrows()]
    if "extrapolation_len" in table:
        out["extrap. len"] = ["-" if pd.isna(v) else f"{int(v)}" for v in table["extrapolation_len"]]
    return out


def latex_table(table: pd.DataFrame) -> str:
    shown = display_table(table, markdown=False)
    shown.columns = [str(c).replace("_", "\\_") for c in shown.columns]
    for col in ("variant", "protocol"):
        shown[col] = shown[col].str.replace("_", "\\_")
    return shown.to_latex(index=False, escape=False, column_format="l" * len(CELL_KEYS) + "r" * (len(shown.columns) - len(CELL_KEYS)))
