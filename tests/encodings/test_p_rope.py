"""p-RoPE (posbench/encodings/p_rope.py): fraction 1 is RoPE, 0 ignores positions, NeoX mode rotates
only its first channels, and its settings are checked."""

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import plain_frequencies
from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, build_encoding
from posbench.model.transformer import ModelConfig, build_model

TINY = ModelConfig(name="tiny", d_model=64, n_layers=2, n_heads=2)


def test_p_rope_at_fraction_one_is_rope_and_at_zero_ignores_positions():
    x = torch.randint(0, 256, (2, 24))
    torch.manual_seed(0)
    rope = build_model(TINY, "rope", {}, 16).eval()
    for mode in ("truncate", "neox"):
        torch.manual_seed(0)
        full = build_model(TINY, "p_rope", {"fraction": 1.0, "mode": mode}, 16).eval()
        with torch.no_grad():
            assert torch.allclose(full(x), rope(x), atol=1e-6)
        torch.manual_seed(0)
        none = build_model(TINY, "p_rope", {"fraction": 0.0, "mode": mode}, 16).eval()
        with torch.no_grad():
            assert torch.allclose(none(x), none(x, torch.arange(24) * 5 + 3), atol=1e-5)


def test_p_rope_neox_rotates_only_its_first_channels():
    enc = build_encoding("p_rope", ModelShape(64, 2, 1, 16), {"fraction": 0.25, "mode": "neox"})
    q = torch.randn(1, 2, 8, 32)
    state = enc.prepare(torch.arange(8) + 5, AttentionOptions())
    rq, _ = enc.rotate(q, q, state)
    assert enc.rotary_dim == 8 and torch.equal(rq[..., 8:], q[..., 8:]) and not torch.allclose(rq[..., :8], q[..., :8])
    trunc = build_encoding("p_rope", ModelShape(64, 2, 1, 16), {"fraction": 0.25})
    inv, _ = trunc.frequencies(AttentionOptions(), 16)
    assert torch.count_nonzero(inv) == 4 and torch.equal(inv[:4], plain_frequencies(32, 10000.0)[:4])


@pytest.mark.parametrize("params, message", [({"mode": "half"}, "encoding.mode='half'; valid: truncate, neox"),
                                             ({"fraction": 1.5}, "encoding.fraction=1.5 must be in [0, 1]")])
def test_p_rope_settings_are_checked(params, message):
    with pytest.raises(PosbenchError, match=message.replace("[", r"\[").replace("]", r"\]")):
        build_encoding("p_rope", ModelShape(64, 2, 1, 16), params)


def test_p_rope_s_modes_turn_the_same_share_of_pairs_in_different_places():
    """truncate (p-RoPE): every channel rotates, the lowest frequencies zeroed; neox: the first channels
    rotate (GPT-NeoX's rotary_pct), the rest pass through."""
    from posbench.encodings.p_rope import MODES, PartialRoPE

    assert MODES == ("truncate", "neox")
    for mode, (rotary_dim, turning) in {"truncate": (32, 12), "neox": (24, 12)}.items():
        enc = build_encoding("p_rope", ModelShape(64, 2, 1, 16), {"fraction": 0.75, "mode": mode})
        assert isinstance(enc, PartialRoPE) and (enc.rotary_dim, enc.turning_pairs) == (rotary_dim, turning), mode
