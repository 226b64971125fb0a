"""The convolutional encoding (posbench/encodings/conv.py) stays causal with a wide kernel."""

import torch

from posbench.model.transformer import ModelConfig, build_model

TINY = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4)


def test_conv_is_causal_even_with_a_wide_kernel():
    torch.manual_seed(0)
    model = build_model(TINY, "conv", {"kernel_size": 7}, 32).eval()
    x = torch.randint(0, 256, (1, 32))
    y = x.clone()
    y[0, 10] += 1
    with torch.no_grad():
        assert torch.allclose(model(x)[:, :10], model(y)[:, :10], atol=1e-6)


def test_conv_adds_a_causal_depthwise_convolution_of_the_last_kernel_size_inputs():
    """x_p <- x_p + sum_{t<k} w_t x_{p-t}, one kernel per channel, zero before the first token."""
    from posbench.encodings import ModelShape, build_encoding
    from posbench.encodings.conv import Conv

    enc = build_encoding("conv", ModelShape(8, 2, 1, 16), {"kernel_size": 3})
    assert isinstance(enc, Conv) and enc.uses_input
    with torch.no_grad():
        enc.conv.bias.normal_()
        x = torch.randn(1, 10, 8)
        y = enc.embed(x, torch.arange(10))
    w, b = enc.conv.weight[:, 0], enc.conv.bias  # [channels, k]: w[:, k - 1] weighs the current input
    for p in range(10):
        expected = x[0, p] + b + sum(w[:, 2 - t] * x[0, p - t] for t in range(3) if p - t >= 0)
        torch.testing.assert_close(y[0, p], expected.detach())
