"""EffRem summaries: the mean over seeds and windows with the report's interval over seeds and text
(Student's t, seeds_and_text), which widens with the seeds' spread and the windows' spread."""

import numpy as np
import pandas as pd
import pytest

from posbench.report.analysis.bootstrap import seeds_and_text
from posbench.report.analysis.effective_remembrance import summarise


def values(tv: np.ndarray) -> pd.DataFrame:
    """One row of EffRem values [seeds, windows] at one cut."""
    return pd.DataFrame([dict(encoding="rope", steps=10, train_len=8, T=32, t=8, kept=24, seed=s, window=w, tv=tv[s, w])
                         for s in range(tv.shape[0]) for w in range(tv.shape[1])])


def test_equal_values_give_a_zero_width_interval():
    row = summarise(values(np.full((3, 4), 0.3))).iloc[0]
    assert (row["mean"], row["lo"], row["hi"]) == pytest.approx((0.3, 0.3, 0.3))
    assert row["runs"] == 3 and row["windows"] == 12


def test_the_interval_is_students_t_over_seeds_with_the_windows_variance_added():
    tv = np.array([[0.1, 0.2, 0.3, 0.2], [0.5, 0.4, 0.6, 0.5], [0.3, 0.3, 0.2, 0.4]])
    row = summarise(values(tv)).iloc[0]
    e = seeds_and_text(tv.mean(1), tv.mean(0).var(ddof=1) / 4, 3)
    assert (row["mean"], row["lo"], row["hi"]) == pytest.approx((e.mean, e.lo, e.hi))
    assert row["lo"] < tv.mean(1).min() and row["hi"] > tv.mean(1).max()  # 3 seeds: wider than their range
    one_seed = summarise(values(tv[:1])).iloc[0]  # windows only
    assert one_seed["lo"] < one_seed["mean"] < one_seed["hi"]
