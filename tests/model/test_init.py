"""The model's initial weights (posbench/model/transformer.py, ModelConfig.init): GPT-2's N(0, 0.02) by
default, every run's so far (so their ids stay: tests/store/test_identity.py), or PyTorch's own layer
defaults, which MQAR's binding needs (results/mqar_levers); a name that is neither is one line."""

from __future__ import annotations

import math

import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.model.transformer import ModelConfig, build_model

CFG = dict(name="t", d_model=64, n_layers=2, n_heads=2, mlp_ratio=4)


def stds(init: str) -> dict[str, float]:
    torch.manual_seed(0)
    model = build_model(ModelConfig(**CFG, init=init), "rope", {}, 16)
    first_linear = next(p for n, p in model.blocks.named_parameters() if n.endswith(".weight") and p.dim() == 2)
    return {"embedding": model.tok_emb.weight.std().item(), "linear": first_linear.std().item(),
            "fan_in": first_linear.shape[1], "tied": model.head.weight is model.tok_emb.weight}


def test_gpt2_draws_every_matrix_at_0_02_and_torch_keeps_pytorch_s_defaults():
    gpt2, torch_ = stds("gpt2"), stds("torch")
    assert gpt2["embedding"] == pytest.approx(0.02, rel=0.05) and gpt2["linear"] == pytest.approx(0.02, rel=0.1)
    assert torch_["embedding"] == pytest.approx(1.0, rel=0.05)  # nn.Embedding: N(0, 1)
    # nn.Linear: kaiming-uniform with a = sqrt(5), U(-1/sqrt(fan_in), 1/sqrt(fan_in)): std 1/sqrt(3 fan_in)
    assert torch_["linear"] == pytest.approx(1 / math.sqrt(3 * torch_["fan_in"]), rel=0.1)
    assert gpt2["tied"] and torch_["tied"]


def test_an_init_that_is_neither_is_refused_in_one_line():
    with pytest.raises(PosbenchError, match="model.init must be one of gpt2, torch, got 'xavier'"):
        ModelConfig(**CFG, init="xavier").check()


def test_runs_at_gpt2_keep_their_ids_and_torch_is_another_run(compose):
    plain, named, other = compose("model=tiny"), compose("model=tiny", "model.init=gpt2"), compose("model=tiny", "model.init=torch")
    assert plain.run_id == named.run_id and other.run_id != plain.run_id
