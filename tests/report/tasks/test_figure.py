"""posbench/report/tasks/figure.py: task accuracy against length (a row of family panels per task, model
and train_len) and one length x condition heatmap panel per variant."""

import matplotlib.pyplot as plt
import pandas as pd

from posbench.report.tasks.figure import METRIC_WORDS, plot_task_accuracy, plot_task_heatmaps
from posbench.tasks import TASKS


def accuracy(tasks):
    return pd.DataFrame([{"task": task, "variant": variant, "model": "small", "train_len": 64, "chance": 0.1,
                          **{m: a for m in ("1x", "2x")}, **{f"{m}_{s}": a for m in ("1x", "2x") for s in ("lo", "hi")}}
                         for task in tasks for variant, a in (("rope", 0.9), ("nope", 0.5))])


def heat(variants):
    return pd.DataFrame([{"task": "passkey", "variant": v, "model": "small", "train_len": 64, "condition": depth,
                          "length": length, "accuracy": 0.5} for v in variants for depth in (0.0, 0.5, 1.0)
                         for length in (64, 128)])


def test_each_task_is_a_row_of_panels(tmp_path):
    plot_task_accuracy(accuracy(["passkey"]), tmp_path / "one.png")
    plot_task_accuracy(accuracy(["passkey", "mqar"]), tmp_path / "two.png")
    one, two = plt.imread(tmp_path / "one.png"), plt.imread(tmp_path / "two.png")
    assert two.shape[0] > 1.5 * one.shape[0] and one.shape[1] == two.shape[1]


def test_each_variant_is_a_heatmap_panel_and_the_metric_is_the_task_s(tmp_path):
    plot_task_heatmaps(heat(["rope"]), "passkey", "depth", tmp_path / "one.png")
    plot_task_heatmaps(heat(["rope", "nope", "alibi"]), "passkey", "depth", tmp_path / "three.png")
    one, three = plt.imread(tmp_path / "one.png"), plt.imread(tmp_path / "three.png")
    assert three.shape[1] > 2 * one.shape[1]
    assert METRIC_WORDS[TASKS.get("passkey").metric] == "exact match"
