"""Canon layers (posbench/model/canon.py, model.canon): h + a causal depthwise convolution of kernel 4 at the
places A, B, C, D of every block, causal, and absent (same modules, same ids) by default."""

import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.model.canon import KERNEL, Canon
from posbench.model.transformer import ModelConfig, build_model

CFG = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4, mlp_ratio=2)


def test_canon_is_the_token_plus_a_weighted_sum_of_it_and_its_three_predecessors():
    torch.manual_seed(0)
    canon = Canon(6).double()
    h = torch.randn(2, 9, 6, dtype=torch.float64)
    w = canon.conv.weight[:, 0, :]  # [C, 4]; tap KERNEL - 1 multiplies the current token
    want = h.clone()
    for t in range(9):
        for s in range(KERNEL):
            if t - s >= 0:
                want[:, t] += w[:, KERNEL - 1 - s] * h[:, t - s]
    torch.testing.assert_close(canon(h), want)
    assert canon.conv.bias is None and KERNEL == 4


def test_the_places_are_the_references():
    model = build_model(ModelConfig(**{**CFG.__dict__, "canon": "ABCD", "mixers": ["gdn", "attention"]}), "rope", {}, 16)
    gdn, attention = model.blocks
    assert attention.canon_a.conv.in_channels == 32 and attention.canon_c.conv.in_channels == 32
    assert attention.attn.canon_b.conv.in_channels == 96  # q, k and v together, as the reference's cat([q, k, v])
    assert attention.mlp.canon_d.conv.in_channels == 64  # the MLP's up-projection
    assert gdn.canon_a is not None and gdn.canon_c is not None and gdn.mlp.canon_d is not None  # B is attention's
    only_ac = build_model(ModelConfig(**{**CFG.__dict__, "canon": "AC"}), "rope", {}, 16)
    assert only_ac.blocks[0].attn.canon_b is None and only_ac.blocks[0].mlp.canon_d is None


@pytest.mark.parametrize("mixers", [["attention"], ["gdn", "attention"]])
def test_a_future_token_changes_no_earlier_output(mixers):
    torch.manual_seed(0)
    model = build_model(ModelConfig(**{**CFG.__dict__, "canon": "ABCD", "mixers": mixers}), "rope", {}, 16).eval()
    x = torch.randint(0, 256, (2, 30))
    y = x.clone()
    y[:, 17] = (y[:, 17] + 1) % 256
    with torch.no_grad():
        a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :17], b[:, :17])
    assert not torch.allclose(a[:, 17:], b[:, 17:])


def test_without_canon_the_model_is_the_one_before_it_existed():
    torch.manual_seed(0)
    plain = build_model(CFG, "rope", {}, 16)
    assert not any("canon" in k for k in plain.state_dict())
    with_canon = build_model(ModelConfig(**{**CFG.__dict__, "canon": "ABCD"}), "rope", {}, 16)
    assert sum("canon" in k for k in with_canon.state_dict()) == 4 * CFG.n_layers


@pytest.mark.parametrize("bad", ["E", "AA", "ab"])
def test_a_bad_place_is_one_line(bad):
    with pytest.raises(PosbenchError, match=f"model.canon='{bad}': give places of Canon layers, each once, from ABCD"):
        ModelConfig(**{**CFG.__dict__, "canon": bad}).check()


def test_runs_without_canon_keep_their_ids(compose):
    assert compose("encoding=rope").run_id == "rope_small_L64_s0_ebc4180d09"
    assert compose("encoding=rope", "model.canon=").run_id == "rope_small_L64_s0_ebc4180d09"
    assert compose("encoding=rope", "model.canon=AC").run_id != "rope_small_L64_s0_ebc4180d09"
    assert compose("encoding=nope", "model=small_canon").run_id.startswith("nope_small_canon_L64_s0_")
