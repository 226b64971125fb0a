"""EffRem summaries (scripts/effective_remembrance.py): per row (encoding, budget) and cut, the mean of
EffRem_T(t) over seeds and windows with the report's own 95% interval over seeds and text
(analysis/bootstrap.py ``seeds_and_text``: Student's t on the per-seed means with the windows' variance
added, right for the few seeds a sweep has). Every seed of a row is scored on the same windows (they
depend on the corpus only), so the text term is the variance of the mean over windows of the
seed-averaged values, with windows - 1 degrees of freedom.
"""

from __future__ import annotations

import pandas as pd

from posbench.report.analysis.bootstrap import seeds_and_text

KEYS = ["encoding", "steps", "train_len", "T", "t", "kept"]


def summarise(values: pd.DataFrame) -> pd.DataFrame:
    """``values`` (one EffRem per run, cut and window: posbench/jobs/effective_remembrance.py) -> per
    row and cut: mean, lo, hi, runs, windows."""
    out = []
    for key, g in values.groupby(KEYS, sort=True):
        table = g.pivot_table(index="seed", columns="window", values="tv")  # [seeds, windows]
        per_window = table.mean(axis=0).to_numpy()
        n_windows = len(per_window)
        text_var = float(per_window.var(ddof=1)) / n_windows if n_windows > 1 else None
        e = seeds_and_text(table.mean(axis=1).to_numpy(), text_var, n_windows - 1)
        out.append(dict(zip(KEYS, key), mean=e.mean, lo=e.lo, hi=e.hi, runs=len(table), windows=int(len(g))))
    return pd.DataFrame(out)


def write(values: pd.DataFrame, out) -> pd.DataFrame:
    """effrem.csv and effrem_summary.csv into the folder ``out`` (made if missing); returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(values)
    values.to_csv(out / "effrem.csv", index=False)  # full precision: --values summarises them again exactly
    summary.to_csv(out / "effrem_summary.csv", index=False, float_format="%.6g")
    return summary
