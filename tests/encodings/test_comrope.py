"""ComRoPE (posbench/encodings/comrope.py): R(p) = exp(p A) with block-diagonal skew-symmetric A per
layer and head, checked against the reference's dense form, the RoPE equation, and its refusals."""

import math

import pytest
import torch

from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, build_encoding
from tests.helpers import attn_output, hf_visible, layer_inputs, model_of, naive

X = torch.Generator().manual_seed(1)


def dense_generator(blocks: torch.Tensor) -> torch.Tensor:
    """[nb, b, b] blocks -> the [d, d] block-diagonal matrix (the reference's block_diag_selector layout)."""
    return torch.block_diag(*blocks)


@pytest.mark.parametrize("params", [{}, {"variant": "ld", "block_size": 4}, {"block_size": 8}])
def test_attention_is_the_reference_dense_rotation(params):
    """softmax((exp(m A) q_m) . (exp(n A) k_n) / sqrt(d)) v with A the dense block-diagonal matrix of each
    head, exp over the whole head (the reference's diagR), positions in units of train_len."""
    model = model_of("comrope", params)
    L, layer = 20, 1
    x = torch.randint(0, 256, (2, L), generator=X)
    a, q, k, v = layer_inputs(model, x, layer)
    gens = model.encoding.at(layer).generators().detach()  # [H, nb, b, b]
    rq, rk = torch.empty_like(q), torch.empty_like(k)
    for h in range(4):
        A = dense_generator(gens[h])
        assert torch.allclose(A, -A.T)  # skew-symmetric
        for p in range(L):
            R = torch.linalg.matrix_exp(p / 16 * A)  # train_len 16: the reference's positions / grid size
            rq[:, h, p], rk[:, h, p] = q[:, h, p] @ R.T, k[:, h, p] @ R.T
    y = naive(rq @ rk.transpose(-1, -2) / math.sqrt(8), v, hf_visible(None, None, L))
    torch.testing.assert_close(attn_output(model, x, layer), model.blocks[layer].attn.proj(y.transpose(1, 2).reshape(2, L, 32)))


@pytest.mark.parametrize("variant", ["ap", "ld"])
def test_the_generator_commutes_so_rotations_satisfy_the_rope_equation(variant):
    """One axis: A commutes with itself, so R(m) R(n) = R(m + n) and R(m)^T R(n) = R(n - m) (the paper's
    RoPE equation), at integer and real positions; q_m . k_n then depends on n - m only."""
    from posbench.encodings.comrope import block_rotations

    enc = build_encoding("comrope", ModelShape(32, 2, 1, 16), {"variant": variant, "block_size": 4})
    A = enc.at(0).generators().detach().double()  # [H, nb, 4, 4]
    pos = torch.tensor([0.0, 3.0, 5.5, 8.5, 40.0])
    R = block_rotations(A, pos)  # [H, 5, nb, 4, 4]
    torch.testing.assert_close(R[:, 1] @ R[:, 2], R[:, 3])  # 3 + 5.5 = 8.5
    torch.testing.assert_close(R[:, 1] @ R[:, 4], R[:, 4] @ R[:, 1])  # the rotations commute
    torch.testing.assert_close(A @ R[:, 2], R[:, 2] @ A)  # and commute with the generator
    torch.testing.assert_close(R[:, 1].transpose(-1, -2) @ R[:, 3], R[:, 2])  # R(3)^T R(8.5) = R(5.5)
    eye = torch.eye(4, dtype=torch.float64).expand_as(R[:, 0])
    torch.testing.assert_close(R[:, 0], eye)
    torch.testing.assert_close(R[:, 4].transpose(-1, -2) @ R[:, 4], eye)  # orthogonal
    q, k = torch.randn(1, 2, 1, 16, dtype=torch.float64), torch.randn(1, 2, 1, 16, dtype=torch.float64)
    state_a, state_b = enc.at(0).prepare(torch.tensor([2.0, 9.0]), None), enc.at(0).prepare(torch.tensor([102.0, 109.0]), None)

    def dot(state):
        rq, rk = enc.at(0).rotate(q.expand(1, 2, 2, 16), k.expand(1, 2, 2, 16), state)
        return (rq[:, :, 1] * rk[:, :, 0]).sum(-1)  # q at the later position, k at the earlier

    torch.testing.assert_close(dot(state_a), dot(state_b))  # same offset 7, shifted by 100


def test_ld_scales_each_block_of_every_head_by_one_shared_multiplier():
    enc = build_encoding("comrope", ModelShape(32, 4, 2, 16), {"variant": "ld", "block_size": 4})
    part = enc.at(1)
    P, theta = part.freqs.detach(), part.multiplier.detach()
    assert theta.shape == (2,) and P.shape == (4, 2, 4, 4)
    torch.testing.assert_close(part.generators().detach(), (P - P.transpose(-1, -2)) * theta[None, :, None, None])
    assert build_encoding("comrope", ModelShape(32, 4, 2, 16)).at(0).multiplier is None  # ap: no multiplier


def test_each_layer_has_its_own_generators_that_learn():
    enc = build_encoding("comrope", ModelShape(32, 4, 3, 16))
    assert len({id(enc.at(i)) for i in range(3)}) == 3
    assert not torch.equal(enc.at(0).freqs, enc.at(1).freqs)
    state = enc.at(2).prepare(torch.arange(10), None)
    q = torch.randn(1, 4, 10, 8)
    enc.at(2).rotate(q, q, state)[0].sum().backward()
    assert enc.at(2).freqs.grad.abs().sum() > 0


@pytest.mark.parametrize("params, message", [
    ({"block_size": 3}, r"encoding.block_size=3 does not divide the head dimension 8 .*divisor of 8"),
    ({"block_size": 16}, r"encoding.block_size=16 does not divide the head dimension 8"),
    ({"variant": "xy"}, r"encoding.variant='xy'; valid: ap, ld"),
])
def test_bad_settings_are_one_line(params, message):
    with pytest.raises(PosbenchError, match=message) as e:
        build_encoding("comrope", ModelShape(32, 4, 2, 16), params)
    assert "\n" not in str(e.value)
