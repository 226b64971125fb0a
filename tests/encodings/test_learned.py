"""The learned table (posbench/encodings/learned.py) is undefined past its size and never clamps."""

import pytest
import torch

from tests.helpers import tiny_model


def test_learned_is_undefined_past_its_table_and_never_clamps():
    model = tiny_model("learned", train_len=16)
    assert model.encoding.undefined_reason(16) is None
    assert "16 positions" in model.encoding.undefined_reason(17)
    with pytest.raises(ValueError):
        model(torch.zeros(1, 17, dtype=torch.long))


def test_a_learned_table_refuses_a_position_past_its_last_row():
    from posbench.encodings import ModelShape, build_encoding
    from posbench.encodings.learned import Learned

    enc = build_encoding("learned", ModelShape(32, 4, 1, 16, max_position=24))
    assert isinstance(enc, Learned) and enc.max_positions == 24  # the largest training position + 1
    x = torch.zeros(1, 25, 32)
    assert enc.embed(x[:, :24], torch.arange(24)).shape == (1, 24, 32)
    assert enc.undefined_reason(24) is None and enc.undefined_reason(25) == "learned table has 24 positions, window needs 25"
    with pytest.raises(ValueError, match="past the learned table"):
        enc.embed(x, torch.arange(25))
