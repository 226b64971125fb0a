"""posbench/model/reference_gpt.py: the benchmark's reference, a GPT of the same size with causal SDPA and
no positional code, called as the LanguageModel is."""

import torch

from posbench.model.reference_gpt import PlainGPT
from posbench.model.transformer import ModelConfig


def test_the_reference_gpt_is_causal_ignores_positions_and_ties_its_head_to_the_embedding():
    torch.manual_seed(0)
    model = PlainGPT(ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4, mlp_ratio=2)).eval()
    assert model.head.weight is model.tok_emb.weight
    x = torch.randint(0, 256, (2, 20))
    y = x.clone()
    y[:, 10] = (y[:, 10] + 1) % 256
    with torch.no_grad():
        out = model(x)
        assert out.shape == (2, 20, 256)
        torch.testing.assert_close(model(y)[:, :10], out[:, :10])
        assert not torch.allclose(model(y)[:, 10:], out[:, 10:])
        assert torch.equal(model(x, torch.arange(20) + 100, object()), out)  # LanguageModel's signature, unused
