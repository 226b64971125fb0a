"""posbench/report/budget/figure.py: 1x perplexity and the longest ratio against training tokens, one
line per row, one column of panels per (model, train_len)."""

import matplotlib.pyplot as plt
import pandas as pd

from posbench.report.budget.figure import plot_budget_axis
from posbench.report.analysis.sweep import TOKENS


def table(panels):
    rows = []
    for model, train_len in panels:
        for variant, ratio in (("rope", 2.0), ("alibi", 1.0)):
            for tokens in (1e6, 2e6, 4e6):
                rows.append({"model": model, "train_len": train_len, "variant": variant, TOKENS: tokens,
                             "1x": 5.0, "1x_lo": 4.8, "1x_hi": 5.2, "4x/1x": ratio, "4x/1x_lo": ratio * 0.9,
                             "4x/1x_hi": ratio * 1.1})
    return pd.DataFrame(rows)


def changes(panels):
    return pd.DataFrame([{"model": m, "train_len": t, "variant": v, "to": b, "change": c, "change_lo": c * 0.9,
                          "change_hi": c * 1.1} for m, t in panels for v, c in (("rope", 1.3), ("alibi", 1.0))
                         for b in (2, 4)])


def test_the_figure_has_a_column_of_panels_per_model_and_train_len(tmp_path):
    none = pd.DataFrame()
    plot_budget_axis(table([("small", 64)]), "4x/1x", none, tmp_path / "one.png")
    plot_budget_axis(table([("small", 64), ("small", 128)]), "4x/1x", none, tmp_path / "two.png")
    one, two = plt.imread(tmp_path / "one.png"), plt.imread(tmp_path / "two.png")
    assert one.shape[0] == two.shape[0] and two.shape[1] > 1.8 * one.shape[1]


def test_the_changes_per_doubling_are_a_third_row_of_panels(tmp_path):
    t = table([("small", 64)]).assign(budget_steps=lambda d: (d[TOKENS] / 1e6).astype(int))
    plot_budget_axis(t, "4x/1x", pd.DataFrame(), tmp_path / "two_rows.png")
    plot_budget_axis(t, "4x/1x", changes([("small", 64)]), tmp_path / "three_rows.png")
    two, three = plt.imread(tmp_path / "two_rows.png"), plt.imread(tmp_path / "three_rows.png")
    assert three.shape[0] > 1.3 * two.shape[0] and three.shape[1] == two.shape[1]
