"""posbench/report/tasks/algorithmic.py: the tasks grouped by level, and Ruoss et al.'s score beyond training, the
accuracy averaged uniformly over the input lengths beyond N (each window weighted by the lengths it scores)."""

import pandas as pd
import pytest

from posbench.report.tasks.algorithmic import algorithmic_frame, algorithmic_table, band_width, level_means, level_of
from posbench.tasks import build_task


def records(task, accs, seeds=(0, 1, 2)):
    return [{"task": task, "variant": "rope", "encoding": "rope", "model": "tiny", "train_len": 64, "seed": s,
             "length": 64 * m, "multiple": float(m), "condition": None, "examples": 64, "token_accuracy": a,
             "exact": a / 2, "accuracy": a, "chance": 0.5} for s in seeds for m, a in accs.items()]


def test_levels_are_the_papers():
    assert [level_of(t) for t in ("parity_check", "flip_flop", "reverse_string", "duplicate_string", "binary_addition",
                                  "bucket_sort", "passkey", "lm")] == \
        ["regular", "regular", "context-free", "context-sensitive", "context-sensitive", "context-sensitive", None, None]


def test_the_score_beyond_training_averages_uniformly_over_lengths():
    """reverse_string at train_len 64: N = 32; the 2x window scores 32 lengths (33..64), the 4x one 64 (65..128):
    the uniform average over 33..128 weights them 1:2."""
    rev = build_task("reverse_string")
    assert band_width("reverse_string", 128) == 32 and band_width("reverse_string", 256) == 64 == rev.max_input(256) - rev.max_input(128)
    frame = algorithmic_frame(pd.DataFrame(records("reverse_string", {1: 1.0, 2: 0.9, 4: 0.3})
                                           + records("passkey", {1: 1.0})))
    assert set(frame["task"]) == {"reverse_string"}
    row = algorithmic_table(frame).iloc[0]
    assert row["level"] == "context-free" and row["1x"] == 1.0
    assert row["beyond"] == pytest.approx((32 * 0.9 + 64 * 0.3) / 96) and row["exact beyond"] == pytest.approx(row["beyond"] / 2)
    assert row["beyond_lo"] <= row["beyond"] <= row["beyond_hi"] and row["seeds"] == 3


def test_tasks_are_grouped_by_level():
    frame = algorithmic_frame(pd.DataFrame(records("duplicate_string", {1: 1.0, 2: 0.2}) + records("parity_check", {1: 1.0, 2: 0.6})
                                           + records("bucket_sort", {1: 1.0, 2: 0.4})))
    table = algorithmic_table(frame)
    assert table["level"].tolist() == ["regular", "context-sensitive", "context-sensitive"]
    means = level_means(table)
    assert means.set_index("level")["beyond"].to_dict() == pytest.approx({"regular": 0.6, "context-sensitive": 0.3})
