"""The sinusoidal table (posbench/encodings/sinusoidal.py): known values."""

import math

import pytest

from posbench.encodings.sinusoidal import sinusoidal_table


def test_sinusoidal_table_known_values():
    t = sinusoidal_table(3, 4)
    # PE[p, 0] = sin(p), PE[p, 1] = cos(p), PE[p, 2] = sin(p / 100), PE[p, 3] = cos(p / 100)
    p = 2
    assert t[p].tolist() == pytest.approx([math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)], abs=1e-6)
    assert t[0].tolist() == pytest.approx([0, 1, 0, 1])
