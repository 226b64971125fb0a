"""Learning-rate schedules: the factor of ``train.lr`` at each optimiser step (``train.schedule``).

``cosine`` (the default): linear warm-up to 1, then cosine decay to ``min_lr_ratio`` at the last step.

``wsd`` (warmup-stable-decay): linear warm-up to 1, constant, then a cool-down to 0 over the last
``cooldown`` fraction of the steps, ``linear`` or ``1-sqrt`` in shape. Hägele et al. 2024, "Scaling
Laws and Compute-Optimal Training Beyond Fixed Training Durations" (arXiv 2405.18392); reference
code epfml/schedules-and-scaling, ``src/optim/utils.py:wsd_schedule``. Because the learning rate
before the cool-down does not depend on the budget, one constant-rate trunk and a short cool-down
branch per budget give the models of every budget (posbench/jobs/branches.py).

As the reference: the cool-down has ``int(cooldown x steps)`` steps and starts at step
``steps - int(cooldown x steps)`` (0-based optimiser steps); at its k-th step (k = 0, 1, ...) of n
the factor is ``1 - k / n`` (linear) or ``1 - sqrt(k / n)`` (1-sqrt), so the first cool-down step
still has the full rate and the target, 0 (the reference's ``--wsd-final-lr-scale`` default, which
its code comments "should be 0 here"), is approached but never taken.

Deviations from the reference: the warm-up is posbench's (``(step + 1) / warmup_steps``, as for
cosine) rather than the reference's start at 1/100 of the rate; ``int(cooldown x steps)`` is taken
after rounding the product to 9 decimals, so that 0.29 x 100 gives 29 cool-down steps, not the 28
that float arithmetic gives; the cool-down may not start before the warm-up ends (refused by
TrainConfig.check, where the reference would simply keep warming up).
"""

from __future__ import annotations

import math

SCHEDULES = ("cosine", "wsd")
COOLDOWN_SHAPES = ("linear", "1-sqrt")


def cooldown_steps(cooldown: float, steps: int) -> int:
    """Steps of the cool-down of a WSD run of ``steps`` steps (the reference's int(fract x steps))."""
    return int(round(cooldown * steps, 9))


def cooldown_start(cooldown: float, steps: int) -> int:
    """The first (0-based) step of the cool-down; also the number of steps a budget's branch takes
    from the trunk (its trunk snapshot is the state after that many steps)."""
    return steps - cooldown_steps(cooldown, steps)


def lr_factor(step: int, tc) -> float:
    """The factor of ``tc.lr`` at the (0-based) optimiser step ``step`` for ``tc.schedule``."""
    if step < tc.warmup_steps:
        return (step + 1) / tc.warmup_steps
    if tc.schedule == "wsd":
        return wsd_factor(step, tc.steps, tc.cooldown, tc.cooldown_shape)
    progress = (step - tc.warmup_steps) / max(1, tc.steps - tc.warmup_steps)
    return tc.min_lr_ratio + (1 - tc.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def wsd_factor(step: int, steps: int, cooldown: float, shape: str) -> float:
    """After the warm-up: 1 until the cool-down starts, then down towards 0 (0 past the last step).
    With no cool-down step (a trunk, posbench/jobs/branches.py) the rate stays 1 throughout, also after
    the last step: a trunk's state after k steps then carries the rate of step k, as the run of
    each budget whose cool-down starts at k has it (its first cool-down step has the full rate)."""
    n = cooldown_steps(cooldown, steps)
    start = steps - n
    if step < start or n == 0:
        return 1.0
    if step >= steps:
        return 0.0
    frac = (step - start) / n
    return 1.0 - (math.sqrt(frac) if shape == "1-sqrt" else frac)
