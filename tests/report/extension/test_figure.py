"""posbench/report/extension/figure.py: perplexity at the target length against fine-tuning steps, one
panel per (model, train_len, target)."""

import matplotlib.pyplot as plt
import pandas as pd

from posbench.report.extension.figure import plot_extension
from posbench.report.extension.frames import CONTROL


def frames(targets):
    curves = pd.DataFrame([{"model": "small", "train_len": 64, "target": target, "encoding": "rope", "method": method,
                            "steps": steps, "ppl": 9.0 - steps / 100 - (method == "yarn")}
                           for target in targets for method in ("yarn", CONTROL) for steps in (0, 10, 100)])
    scratch = pd.DataFrame([{"model": "small", "target": target, "encoding": "rope", "ppl": 7.5} for target in targets])
    return curves, scratch


def test_each_target_length_is_a_panel_of_its_own(tmp_path):
    plot_extension(*frames([256]), tmp_path / "one.png")
    plot_extension(*frames([256, 512]), tmp_path / "two.png")
    one, two = plt.imread(tmp_path / "one.png"), plt.imread(tmp_path / "two.png")
    assert one.shape[0] == two.shape[0] and two.shape[1] > 1.8 * one.shape[1]
