"""posbench/report/tasks/effective_length.py: claimed vs effective length, the absolute floor (halfway from chance)
and NoLiMa's 85% of the model's own 1x accuracy, both applied, on made-up accuracies."""

import numpy as np
import pandas as pd
import pytest

from posbench.report.tasks.effective_length import effective_multiple, effective_table, floor

M = [1, 2, 4, 8, 16]


def test_a_made_up_drop_is_found_at_the_right_multiple():
    # chance 1/2: the floor is 75%; the accuracy falls below it at 8x
    assert effective_multiple(M, [0.99, 0.95, 0.9, 0.7, 0.9], [0.5] * 5) == 4
    # above the floor everywhere, but 8x is below 85% of 1x (0.85 * 0.99 = 0.84): the relative rule decides
    assert effective_multiple(M, [0.99, 0.95, 0.9, 0.8, 0.8], [0.5] * 5) == 4
    # a weaker 1x lowers the relative bar, not the floor: 0.77 >= 0.85 * 0.9 = 0.765 and >= 0.75
    assert effective_multiple(M, [0.9, 0.85, 0.8, 0.8, 0.77], [0.5] * 5) == 16
    # 1x below the floor: effective length 0 (not learned where trained)
    assert effective_multiple(M, [0.7, 0.7, 0.7, 0.7, 0.7], [0.5] * 5) == 0
    # the first failure ends it, a recovery later does not count (RULER: up to the first length below the bar)
    assert effective_multiple(M, [1.0, 0.5, 1.0, 1.0, 1.0], [0.0] * 5) == 1


def test_the_floor_is_halfway_from_chance():
    assert floor(0.5) == 0.75 and floor(1e-5) == pytest.approx(0.5, abs=1e-4) and floor(float("nan")) == 0.5
    # a length-dependent chance (common_words) moves the floor per multiple
    assert effective_multiple([1, 2], [0.62, 0.6], [0.2, 0.1]) == 2
    assert effective_multiple([1, 2], [0.62, 0.6], [0.2, 0.3]) == 1


def test_the_table_gives_claimed_effective_and_its_range():
    table = pd.DataFrame([{"task": "variable_tracking", "variant": "rope", "model": "tiny", "train_len": 64, "seeds": 3,
                           **{f"{m}x": a for m, a in zip(M, [0.99, 0.95, 0.9, 0.7, 0.6])},
                           **{f"{m}x_lo": a - 0.1 for m, a in zip(M, [0.99, 0.95, 0.9, 0.7, 0.6])},
                           **{f"{m}x_hi": a + 0.1 for m, a in zip(M, [0.99, 0.95, 0.9, 0.7, 0.6])}}])
    frame = pd.DataFrame([{"task": "variable_tracking", "variant": "rope", "model": "tiny", "train_len": 64,
                           "multiple": float(m), "chance": 0.5} for m in M])
    row = effective_table(table, frame).iloc[0]
    assert row["claimed"] == 64 and row["longest evaluated"] == 1024 and row["effective"] == 256
    # lower ends: 2x at 0.85 passes, 4x at 0.8 is below 0.85 * 0.99; upper ends: 8x at 0.8 fails the relative bar
    assert (row["effective x_lo"], row["effective x"], row["effective x_hi"]) == (2, 4, 4)
    assert np.isclose(row["floor"], 0.75)
