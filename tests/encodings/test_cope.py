"""CoPE (posbench/encodings/cope.py) against the reference definition, pair by pair."""

import math

import pytest
import torch

from posbench.encodings import ModelShape, build_encoding
from tests.helpers import attn_output, layer_inputs, model_of

X = torch.Generator().manual_seed(1)


def reference_cope(q, k, v, pos_emb, npos):
    """facebookresearch/RAM projects/cope ContextPosSelfAttn.forward (defaults), one pair at a time."""
    B, H, L, D = q.shape
    logits = torch.full((B, H, L, L), float("-inf"), dtype=q.dtype)
    for i in range(L):
        gates = [torch.sigmoid((q[:, :, i] * k[:, :, t]).sum(-1) / math.sqrt(D)) for t in range(i + 1)]
        for j in range(i + 1):
            p = torch.clamp(sum(gates[j : i + 1]), max=npos - 1)
            lo, hi = p.floor().long(), p.ceil().long()
            e_lo = (q[:, :, i] * pos_emb[:, lo].permute(1, 2, 0)).sum(-1)
            e_hi = (q[:, :, i] * pos_emb[:, hi].permute(1, 2, 0)).sum(-1)
            w = p - lo
            pos_logit = e_hi * w + e_lo * (1 - w)
            logits[:, :, i, j] = ((q[:, :, i] * k[:, :, j]).sum(-1) + pos_logit) / math.sqrt(D)
    return logits.softmax(-1) @ v


@pytest.mark.parametrize("L", [9, 24])  # 24 > npos: counted positions clamp at npos - 1
def test_cope_matches_the_reference_definition(L):
    model = model_of("cope", train_len=8)
    x = torch.randint(0, 256, (1, L), generator=X)
    a, q, k, v = layer_inputs(model, x, 1)
    enc = model.encoding
    assert enc.npos == 9 and enc.pos_emb.shape == (4, 8, 9)
    y = reference_cope(q, k, v, enc.pos_emb[1].detach(), enc.npos)
    torch.testing.assert_close(attn_output(model, x, 1), model.blocks[1].attn.proj(y.transpose(1, 2).reshape(1, L, 32)))
    assert torch.all(build_encoding("cope", ModelShape(32, 4, 4, 8)).pos_emb == 0)  # the reference's init


def test_cope_positions_count_the_gates_that_open_between_key_and_query():
    """p_ij = sum_{t=j}^{i} g_it: with every gate open the position of key j is i - j + 1 (clamped at
    npos - 1) and e_ij = q_i . E[p_ij]; with every gate shut it is 0."""
    from posbench.encodings.cope import CoPE, cope_logits

    c, npos = 6, 4
    q = torch.randn(1, 1, c, 3, dtype=torch.float64)
    pos_emb = torch.randn(3, npos, dtype=torch.float64)
    hidden = torch.ones(c, c, dtype=torch.bool).triu(1)  # the future
    fixed = (q @ pos_emb)[0, 0]  # q_i . E[p] for the integer positions p
    opened = cope_logits(torch.full((1, 1, c, c), 60.0, dtype=torch.float64), q, pos_emb, hidden)[0, 0]
    shut = cope_logits(torch.full((1, 1, c, c), -60.0, dtype=torch.float64), q, pos_emb, hidden)[0, 0]
    for i in range(c):
        for j in range(i + 1):
            assert opened[i, j].item() == pytest.approx(fixed[i, min(i - j + 1, npos - 1)].item())
            assert shut[i, j].item() == pytest.approx(fixed[i, 0].item())
    assert build_encoding("cope", ModelShape(32, 4, 2, 16)).npos == 17 and isinstance(
        build_encoding("cope", ModelShape(32, 4, 2, 16)), CoPE)  # npos = train_len + 1, the reference's
