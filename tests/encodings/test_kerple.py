"""KERPLE (posbench/encodings/kerple.py): the official formulas and initial values, and parameters at
their bounds that still learn."""

import pytest
import torch

from posbench.encodings import ModelShape, build_encoding


def test_kerple_log_matches_the_official_formula_and_init():
    torch.manual_seed(0)
    enc = build_encoding("kerple_log", ModelShape(64, 64, 3, 16))  # many heads: the ranges show
    p, a = enc.r1.detach(), enc.r2.detach()
    assert p.shape == (64,) and 1.0 < p.max() <= 2.0 and a.max() <= 1.0  # p ~ U(0, 2), a ~ U(0, 1)
    assert sum(x.numel() for x in enc.parameters()) == 2 * 64  # one set, shared by the 3 layers
    b = enc.bias(torch.tensor([50]), torch.tensor([50, 49, 40, 0]), 2)[:, 0]
    p, a = p.clamp(min=0.01), a.clamp(min=0.01)
    for i, dist in enumerate([0, 1, 10, 50]):
        assert torch.allclose(b[:, i], -p * torch.log(1 + a * dist), atol=1e-5)
    assert torch.equal(b, enc.bias(torch.tensor([50]), torch.tensor([50, 49, 40, 0]), 0)[:, 0])  # same in every layer


def test_kerple_power_matches_the_official_formula_and_init():
    torch.manual_seed(0)
    enc = build_encoding("kerple_power", ModelShape(64, 64, 2, 16))
    a, p = enc.r1.detach().clamp(min=0.01), enc.r2.detach().clamp(0.01, 2)
    assert a.max() <= 1.0 and 1.0 < p.max() <= 2.0  # a ~ U(0, 1), p ~ U(0, 2)
    b = enc.bias(torch.tensor([50]), torch.tensor([50, 49, 40, 0]), 1)[:, 0]
    for i, dist in enumerate([0, 1, 10, 50]):
        assert torch.allclose(b[:, i], -a * dist ** p, atol=1e-4)


@pytest.mark.parametrize("name", ["kerple_log", "kerple_power"])
def test_a_kerple_parameter_at_its_bound_is_projected_and_still_learns(name):
    enc = build_encoding(name, ModelShape(16, 2, 1, 16))
    with torch.no_grad():
        enc.r1.fill_(-0.5)  # where an optimiser step could push it
        enc.r2.fill_(5.0 if name == "kerple_power" else -1.0)
    b = enc.bias(torch.arange(8), torch.arange(8), 0)
    assert (enc.r1 >= 0.01).all() and (enc.r2 >= 0.01).all()
    if name == "kerple_power":
        assert (enc.r2 <= 2.0).all()
    b.sum().backward()
    assert (enc.r1.grad.abs() > 0).all() and (enc.r2.grad.abs() > 0).all()  # no dead gradient at the bound


def test_kerple_power_has_finite_gradients_at_distance_zero():
    enc = build_encoding("kerple_power", ModelShape(32, 4, 2, 16))
    enc.bias(torch.arange(8), torch.arange(8), 0).sum().backward()
    assert torch.isfinite(enc.r1.grad).all() and torch.isfinite(enc.r2.grad).all()


def test_the_projection_clamps_only_what_is_out_of_range():
    """The official code's bounds: both parameters at least EPS; the power kernel's exponent at most 2,
    the log kernel's unbounded above. Values in range are left as they are."""
    from posbench.encodings.kerple import EPS, KerpleLog, KerplePower

    power = build_encoding("kerple_power", ModelShape(16, 3, 1, 16))
    assert isinstance(power, KerplePower)
    with torch.no_grad():
        power.r1.copy_(torch.tensor([-1.0, 0.5, 0.005]))
        power.r2.copy_(torch.tensor([3.0, 1.5, 0.0]))
    power.project()
    assert power.r1.tolist() == pytest.approx([EPS, 0.5, EPS]) and power.r2.tolist() == pytest.approx([2.0, 1.5, EPS])
    log = build_encoding("kerple_log", ModelShape(16, 3, 1, 16))
    assert isinstance(log, KerpleLog)
    with torch.no_grad():
        log.r2.copy_(torch.tensor([5.0, 0.5, 0.001]))
    log.project()
    assert log.r2.tolist() == pytest.approx([5.0, 0.5, EPS])
