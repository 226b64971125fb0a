"""posbench/report/drawing/figure_layout.py: panels of few lines that never look alike, colour-bar ticks apart."""

from __future__ import annotations

import math

from posbench.report.drawing.figure_layout import (
    MAX_LINES,
    chunks,
    distinct_styles,
    log_colourbar_ticks,
)


def test_figure_panels_hold_few_lines_that_never_look_alike():
    parts = chunks([f"rope+s{i}" for i in range(19)])
    assert [len(p) for p in parts] == [7, 6, 6] and max(len(p) for p in parts) <= MAX_LINES
    styles = distinct_styles({"alibi": ("#d62728", "-"), "x": ("#393b79", "-"), "y": ("#393b79", "-"), "z": ("#393b79", "-")})
    assert len(set(styles.values())) == 4 and styles["alibi"] == ("#d62728", "-") and styles["y"] == ("#393b79", "--")


def test_colour_bar_ticks_keep_apart():
    """Today's quick report had ticks 0.9, 0.95, 1, 1.05, 1.1 on a bar from 0.29 to 3.46: printed on top
    of each other. Ticks now keep at least a seventh of the bar apart."""
    for vmin, vmax in [(1 / 3.46, 3.46), (1 / 1.09, 1.09), (1 / 40, 40), (0.99, 1.01)]:
        ticks = log_colourbar_ticks(vmin, vmax)
        gaps = [math.log(b / a) for a, b in zip(ticks, ticks[1:])]
        assert len(ticks) >= 3 and min(gaps) >= math.log(vmax / vmin) / 7 - 1e-9, (vmin, vmax, ticks)
    assert 1 in log_colourbar_ticks(1 / 3.46, 3.46)
