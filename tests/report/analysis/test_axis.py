"""posbench/report/analysis/axis.py: the change between consecutive points of a row (and over the whole row),
in the points' order, per their distance; points whose statistics differ are not compared."""

import math

import numpy as np
import pytest

from posbench.report.analysis import axis, bootstrap


def parts(seeds, values):
    return bootstrap.Parts(tuple(seeds), np.log(np.asarray(values, float)), None, 0, None)


def test_consecutive_points_in_order_and_the_whole_row():
    found = {("r", 256): ("s", parts([0, 1, 2], [4.0, 4.1, 3.9])), ("r", 32): ("s", parts([0, 1, 2], [1.0, 1.02, 0.98])),
             ("r", 64): ("s", parts([0, 1, 2], [2.0, 2.05, 1.95]))}
    out = axis.step_changes(found, ["row"], lambda a, b: math.log2(b / a), unpaired=True, whole=True)
    assert list(zip(out["from"], out["to"], out["whole"])) == [(32, 64, False), (64, 256, False), (32, 256, True)]
    assert out["change"].tolist() == pytest.approx([2.0, 2 ** 0.5, 2 ** (2 / 3)], rel=1e-2)  # per doubling
    assert out["paired"].all()


def test_points_read_on_different_statistics_are_not_compared():
    found = {("r", 32): ("on equal context", parts([0, 1], [1.0, 1.0])), ("r", 64): ("16x/1x", parts([0, 1], [2.0, 2.0]))}
    out = axis.step_changes(found, ["row"], lambda a, b: 1.0)
    assert math.isnan(out["change"].iloc[0]) and out["statistic"].iloc[0] == "on equal context vs 16x/1x"
