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
