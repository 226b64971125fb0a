"""xPos (posbench/encodings/xpos.py): its scale base follows the training length and the formula."""

import torch

from posbench.attention.options import AttentionOptions
from posbench.encodings import ModelShape, build_encoding


def test_xpos_scale_base_follows_the_training_length_and_the_formula():
    train_len, d = 64, 8
    enc = build_encoding("xpos", ModelShape(4 * d, 4, 1, train_len))
    plain = build_encoding("rope", ModelShape(4 * d, 4, 1, train_len))
    assert enc.scale_base == train_len / 2  # the paper: 512 at 1024
    torch.manual_seed(0)
    q, k = torch.randn(1, 4, 100, d, dtype=torch.float64), torch.randn(1, 4, 100, d, dtype=torch.float64)
    pos = torch.arange(100)
    qx, kx = enc.rotate(q.float(), k.float(), enc.prepare(pos, AttentionOptions()))
    qr, kr = plain.rotate(q.float(), k.float(), plain.prepare(pos, AttentionOptions()))
    zeta = (torch.arange(0, d, 2, dtype=torch.float64) / d + 0.4) / 1.4
    for n, m in [(10, 3), (99, 0), (50, 50)]:
        got = (qx[0, :, n] * kx[0, :, m]).double()
        ref = (qr[0, :, n] * kr[0, :, m]).double() * torch.cat([zeta, zeta]) ** ((n - m) / (train_len / 2))
        assert torch.allclose(got.sum(-1), ref.sum(-1), atol=1e-4)


def test_xpos_decays_the_fastest_pairs_most():
    """zeta_i = (2i/d + gamma) / (1 + gamma): gamma / (1 + gamma) for the fastest pair, rising towards 1;
    gamma 0 is allowed (the fastest pair then decays completely)."""
    from posbench.encodings.xpos import XPos

    enc = build_encoding("xpos", ModelShape(32, 4, 1, 64))
    assert isinstance(enc, XPos)
    zeta = enc.zeta[:4]  # head dimension 8: four rotated pairs, the same factor for both halves
    torch.testing.assert_close(zeta, (torch.arange(0, 8, 2, dtype=torch.float64) / 8 + 0.4) / 1.4)
    assert torch.equal(enc.zeta[4:], zeta) and torch.all(zeta[1:] > zeta[:-1]) and zeta[-1] < 1
    assert build_encoding("xpos", ModelShape(32, 4, 1, 64), {"gamma": 0.0}).zeta[0] == 0
