"""Claimed vs effective length of a task run (RULER, Hsieh et al. 2024, arXiv 2404.06654, Table 3; NoLiMa,
Modarressi et al. 2025, arXiv 2502.05167).

RULER calls a model's effective length the longest length at which its task score stays above a fixed
bar (Llama-2-7B's 85.6% at 4K); NoLiMa the longest at which it stays at or above 85% of the model's own
short-length score. Both rules are applied here, per task x variant x model x train_len, to the accuracy
at each evaluated multiple (mean over the task's grid and seeds, posbench/report/analysis/task_frames.py)::

    passes(m)   acc(m) >= floor(m)  and  acc(m) >= 0.85 * acc(1x)
    floor(m)    (1 + chance(m)) / 2, halfway from the task's chance level to 100%
    effective   the longest multiple m such that every evaluated multiple up to m passes (0: 1x fails)

The absolute floor: RULER's 85.6% is a 7B model's score and means nothing for a toy model, and one
number cannot serve tasks whose chance runs from 10^-5 (passkey) to 1/2 (variable tracking with two
chains); halfway from chance to perfect is the level the report already uses to call a run "not
learned" (tasks.not_learned), so a run is effective at a length where it would count as having learned
the task there. ``claimed`` is the training length, the context the model was built for (RULER's
claimed length); here a model may be effective beyond it. The range [lo, hi] applies the same rule to
the lower and the upper ends of each multiple's 95% interval over examples and seeds (tasks.task_interval),
with 85% of the 1x mean as the relative bar.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from posbench.report.analysis.task_frames import KEYS

RELATIVE = 0.85  # NoLiMa's share of the model's own 1x accuracy


def floor(chance: float) -> float:
    """The absolute bar: halfway from chance (0 when unknown) to 100%."""
    return (1 + (0.0 if np.isnan(chance) else chance)) / 2


def effective_multiple(multiples: list[float], acc: list[float], chance: list[float], base: float | None = None) -> float:
    """The longest multiple up to which every multiple passes both rules (``multiples`` ascending, with 1;
    ``acc`` the accuracy at each, ``chance`` the chance level at each; ``base`` the 1x accuracy the
    relative bar is taken from, by default ``acc`` at 1x); 0 when 1x fails the floor."""
    if base is None:
        base = acc[multiples.index(1)] if 1 in multiples else np.nan
    best = 0.0
    for m, a, c in zip(multiples, acc, chance):
        if np.isnan(a) or a < floor(c) or (m > 1 and not a >= RELATIVE * base):
            break
        best = m
    return best


def effective_table(table: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """Per row of the task table (tasks.task_table): claimed (train_len), the longest length evaluated,
    the accuracy at 1x, the floor at 1x, and the effective length in multiples and tokens with its
    range. ``frame``: the task records (their ``chance`` per length)."""
    chance = frame.groupby([*KEYS, "multiple"])["chance"].mean()
    rows = []
    for r in table.to_dict("records"):
        multiples = sorted(float(c[:-1]) for c in r if isinstance(c, str) and c.endswith("x") and not np.isnan(r[c]))
        key = tuple(r[k] for k in KEYS)
        ch = [float(chance.get((*key, m), np.nan)) for m in multiples]
        acc = [r[f"{m:g}x"] for m in multiples]
        lo = [r[f"{m:g}x_lo"] for m in multiples]
        hi = [r[f"{m:g}x_hi"] for m in multiples]
        base = acc[multiples.index(1)] if 1 in multiples else np.nan

        eff = effective_multiple(multiples, acc, ch)
        eff_lo, eff_hi = effective_multiple(multiples, lo, ch, base), effective_multiple(multiples, hi, ch, base)
        rows.append({**dict(zip(KEYS, key)), "claimed": int(r["train_len"]), "longest evaluated": int(r["train_len"] * max(multiples)),
                     "1x": base, "floor": floor(ch[0]) if ch else np.nan, "effective x": eff, "effective x_lo": eff_lo,
                     "effective x_hi": eff_hi, "effective": int(round(eff * r["train_len"])), "seeds": r["seeds"]})
    return pd.DataFrame(rows)


def display_effective_table(eff: pd.DataFrame) -> pd.DataFrame:
    """As the report prints it: accuracy in %, the effective length in tokens with its multiple and range."""
    shown = eff[KEYS].copy()
    shown["claimed"] = eff["claimed"]
    shown["1x"] = [f"{100 * v:.0f}" if not np.isnan(v) else "" for v in eff["1x"]]
    shown["floor at 1x"] = [f"{100 * v:.0f}" if not np.isnan(v) else "" for v in eff["floor"]]
    shown["effective"] = [f"{e} ({m:g}x) [{lo:g}x, {hi:g}x]" for e, m, lo, hi in
                          zip(eff["effective"], eff["effective x"], eff["effective x_lo"], eff["effective x_hi"])]
    shown["longest evaluated"] = eff["longest evaluated"]
    shown["seeds"] = eff["seeds"]
    return shown
