"""posbench/training/schedules.py: warmup-stable-decay is the reference's schedule after the warm-up;
cosine is unchanged."""

import math

import pytest

from posbench.training.schedules import cooldown_start, lr_factor
from posbench.training.trainer import TrainConfig


def reference_wsd(step, n_iterations, fract_decay, decay_type):
    """epfml/schedules-and-scaling src/optim/utils.py wsd_schedule after its warm-up, final_lr_factor 0."""
    n_anneal_steps = int(fract_decay * n_iterations)
    n_hold = n_iterations - n_anneal_steps
    if step < n_hold:
        return 1.0
    frac = (step - n_hold) / n_anneal_steps
    return 1 - (frac if decay_type == "linear" else math.sqrt(frac))


@pytest.mark.parametrize("shape", ["linear", "1-sqrt"])
def test_wsd_is_the_references_schedule_after_the_warm_up(shape):
    tc = TrainConfig(schedule="wsd", steps=600, warmup_steps=50, cooldown=0.2, cooldown_shape=shape)
    assert [lr_factor(s, tc) for s in range(50, 600)] == [reference_wsd(s, 600, 0.2, shape) for s in range(50, 600)]
    assert lr_factor(479, tc) == lr_factor(480, tc) == 1.0 and 0 < lr_factor(599, tc) < 0.3
    assert [lr_factor(s, tc) for s in range(50)] == [(s + 1) / 50 for s in range(50)]


def test_cooldown_rounding_ignores_float_noise():
    assert cooldown_start(0.29, 100) == 71  # 0.29 x 100 is 28.999999999999996 in floats
    assert [cooldown_start(0.2, b) for b in (600, 1200, 2400, 4800)] == [480, 960, 1920, 3840]


def test_cosine_is_unchanged():
    tc = TrainConfig(steps=100, warmup_steps=10, min_lr_ratio=0.1)
    assert lr_factor(10, tc) == 1.0 and lr_factor(100, tc) == pytest.approx(0.1)
    assert lr_factor(55, tc) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
