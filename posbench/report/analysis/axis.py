"""A verdict's statistic along an axis: the change between consecutive points of a row, tested.

An axis is any setting the runs move one value at a time (the training budget, the training
length, the model's size, the corpus, the tokenizer). Per row (the other settings held) and pair of
consecutive points ``a`` -> ``b``, the change of the verdict's statistic (on equal context where the
row has a window control, else its ratio to 1x: budgets.row_parts) from ``a`` to ``b``, divided by
``distance(a, b)`` (the number of doublings between the two for a numeric axis, 1 for a category),
with the report's interval: paired by seed (bootstrap.paired_change) where the two points share seeds,
else, where asked, the unpaired difference (bootstrap.unpaired_change). ``whole``: also the change
from the first point to the last (a drift that no single step resolves can be resolved over the axis).

posbench/report/analysis/sweep.py reads the budget trend from these rows (per doubling of the budget, paired
only: the budgets of a seed are cool-downs of one trunk); posbench/report/map/ reads every other axis.
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from posbench.report.analysis import bootstrap

CHANGE_COLUMNS = ["from", "to", "statistic", "change", "change_lo", "change_hi", "change_lo90", "change_hi90", "p",
                  "seeds", "paired", "whole", "distance", "one_document"]


def within_step(row, margin: float) -> bool:
    """The equivalence test over the whole step (TOST): the 90% interval of the change per unit of
    distance, raised to the step's distance, inside [1 / (1 + margin), 1 + margin]. A step of 2.6
    doublings of parameters is bounded within +-margin, not +-margin per doubling (+-13%)."""
    d = float(row["distance"]) if "distance" in row and pd.notna(row["distance"]) else 1.0
    lo, hi = row["change_lo90"], row["change_hi90"]
    return bool(pd.notna(lo) and pd.notna(hi) and lo ** d >= 1 / (1 + margin) and hi ** d <= 1 + margin)


def as_change(row) -> bootstrap.Change:
    """A change row (``step_changes``) as the test it records."""
    return bootstrap.Change(row["change"], row["change_lo"], row["change_hi"], row["change_lo90"], row["change_hi90"],
                            row["p"], int(row["seeds"]))


def step_changes(parts: dict[tuple, tuple[str, bootstrap.Parts | None]], names: list[str],
                 distance: Callable[[Any, Any], float], order: Callable[[Any], Any] | None = None,
                 unpaired: bool = False, whole: bool = False) -> pd.DataFrame:
    """``parts``: {(*row key, point): (statistic, Parts)}; ``names``: the row key's column names.
    One row per row key and pair of consecutive points (in ``order``'s order; the points' own without
    it): ``names``, CHANGE_COLUMNS. Two points whose statistics differ (one with a window control, one
    without) are not compared: their change is NaN, their ``statistic`` names both."""
    key_of = order or (lambda v: v)
    rows = []
    for key in sorted({k[:-1] for k in parts}, key=lambda k: tuple(map(str, k))):
        points = sorted((k[-1] for k in parts if k[:-1] == key), key=key_of)
        steps = list(zip(points, points[1:])) + ([(points[0], points[-1])] if whole and len(points) > 2 else [])
        for i, (a, b) in enumerate(steps):
            (sa, before), (sb, after) = parts[(*key, a)], parts[(*key, b)]
            if sa != sb:
                ch, paired, statistic = bootstrap.NO_CHANGE, False, f"{sa} vs {sb}"
            elif unpaired:
                (ch, paired), statistic = bootstrap.change_between(before, after, distance(a, b)), sa
            else:
                ch, paired, statistic = bootstrap.paired_change(before, after, distance(a, b)), True, sa
            rows.append({**dict(zip(names, key)), "from": a, "to": b, "statistic": statistic, "change": ch.factor,
                         "change_lo": ch.lo, "change_hi": ch.hi, "change_lo90": ch.lo90, "change_hi90": ch.hi90,
                         "p": ch.p, "seeds": ch.seeds, "paired": paired, "whole": i >= len(points) - 1,
                         "distance": distance(a, b), "one_document": ch.one_document})
    return pd.DataFrame(rows, columns=names + CHANGE_COLUMNS if not rows else None)
