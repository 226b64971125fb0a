"""Sinusoidal positions concatenated to the input (posbench/encodings/sinusoidal_concat.py), projected
back to d_model: it starts as NoPE plus a little position, W = [I ; W_pos] with small W_pos."""

import torch

from posbench.encodings import ModelShape, build_encoding
from posbench.encodings.sinusoidal import sinusoidal_table


def test_the_projection_starts_as_the_identity_on_the_input_plus_a_little_position():
    from posbench.encodings.sinusoidal_concat import SinusoidalConcat

    enc = build_encoding("sinusoidal_concat", ModelShape(32, 4, 1, 16), {"d_pos": 8})
    assert isinstance(enc, SinusoidalConcat) and enc.uses_input
    w = enc.proj.weight.detach()
    assert torch.equal(w[:, :32], torch.eye(32)) and 0 < w[:, 32:].abs().max() < 0.05
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        y = enc.embed(x, torch.arange(10))
    table = sinusoidal_table(torch.arange(10), 8).reshape(10, 8)
    torch.testing.assert_close(y, x + table @ w[:, 32:].T)
