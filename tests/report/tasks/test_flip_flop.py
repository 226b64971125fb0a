"""posbench/report/tasks/flip_flop.py: flip-flop's read error (1 - token accuracy) per ignore probability,
named in-distribution / sparse / dense against the run's training one, mean over seeds, drawn on log axes."""

import pandas as pd
import pytest

from posbench.report.tasks.flip_flop import display_error_table, error_table, plot_errors, regime


def records(accs):
    """accs: {(ignore, multiple, seed): token accuracy}; one run per seed."""
    return pd.DataFrame([{"task": "flip_flop", "variant": "rope", "encoding": "rope", "model": "tiny", "train_len": 64,
                          "seed": s, "run_id": f"r{s}", "length": 64 * m, "multiple": float(m), "condition": p,
                          "examples": 32, "token_accuracy": a, "exact": 0.0, "accuracy": a}
                         for (p, m, s), a in accs.items()])


def test_regimes_are_named_against_the_training_ignore_probability():
    assert [regime(p, 0.8) for p in (0.8, 0.98, 0.1)] == ["in-distribution", "sparse", "dense"]
    assert regime(0.8, 0.9) == "dense"


def test_the_error_is_one_minus_accuracy_mean_over_seeds_per_regime(tmp_path):
    accs = {(0.8, 1, 0): 1.0, (0.8, 1, 1): 0.998, (0.98, 1, 0): 0.9, (0.98, 1, 1): 0.8, (0.1, 1, 0): 0.99,
            (0.1, 1, 1): 0.97, (0.8, 2, 0): 0.5, (0.8, 2, 1): 0.7, (0.98, 2, 0): 0.6, (0.98, 2, 1): 0.6,
            (0.1, 2, 0): 0.9, (0.1, 2, 1): 0.9}
    table = error_table(records(accs), {"r0": 0.8, "r1": 0.8})
    assert table["regime"].tolist() == ["in-distribution", "sparse", "dense"]
    assert table["1x"].tolist() == pytest.approx([0.001, 0.15, 0.02]) and table["2x"].tolist() == pytest.approx([0.4, 0.4, 0.1])
    assert (table["seeds"] == 2).all()
    shown = display_error_table(table)
    assert shown["1x"].tolist() == ["0.1", "15", "2"]
    plot_errors(table, tmp_path / "e.png")
    assert (tmp_path / "e.png").stat().st_size > 0


def test_a_perfect_cell_prints_zero_and_other_tasks_are_left_out():
    frame = pd.concat([records({(0.8, 1, 0): 1.0}), records({(0.8, 1, 0): 0.5}).assign(task="parity_check")])
    table = error_table(frame, {"r0": 0.8})
    assert len(table) == 1 and display_error_table(table)["1x"].tolist() == ["0"]
    assert error_table(frame[frame["task"] == "parity_check"], {}).empty
