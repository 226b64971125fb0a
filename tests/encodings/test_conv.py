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
