"""posbench/report/budget_figure.py: 1x perplexity and the longest ratio against training tokens, one
line per row, one column of panels per (model, train_len)."""

import matplotlib.pyplot as plt
import pandas as pd

from posbench.report.budget_figure import plot_budget_axis
from posbench.report.budgets import TOKENS


def table(panels):
    rows = []
    for model, train_len in panels:
        for variant, ratio in (("rope", 2.0), ("alibi", 1.0)):
            for tokens in (1e6, 2e6, 4e6):
                rows.append({"model": model, "train_len": train_len, "variant": variant, TOKENS: tokens,
                             "1x": 5.0, "1x_lo": 4.8, "1x_hi": 5.2, "4x/1x": ratio, "4x/1x_lo": ratio * 0.9,
                             "4x/1x_hi": ratio * 1.1})
    return pd.DataFrame(rows)


def test_the_figure_has_a_column_of_panels_per_model_and_train_len(tmp_path):
    plot_budget_axis(table([("small", 64)]), "4x/1x", tmp_path / "one.png")
    plot_budget_axis(table([("small", 64), ("small", 128)]), "4x/1x", tmp_path / "two.png")
    one, two = plt.imread(tmp_path / "one.png"), plt.imread(tmp_path / "two.png")
    assert one.shape[0] == two.shape[0] and two.shape[1] > 1.8 * one.shape[1]
