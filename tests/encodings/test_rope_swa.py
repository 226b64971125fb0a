"""RoPE with a sliding window in every layer (posbench/encodings/rope_swa.py): the pattern ``[rope/swa]``."""

import torch

from posbench.attention.kernels import Window
from posbench.encodings import ModelShape, build_encoding


def test_every_layer_is_rope_with_a_window_of_a_quarter_of_train_len():
    from posbench.encodings.rope_swa import RoPESWA

    enc = build_encoding("rope_swa", ModelShape(32, 4, 3, 64))
    assert isinstance(enc, RoPESWA) and list(enc.parts) == ["rope"]
    assert [(enc.at(i).part.name, enc.at(i).window(i)) for i in range(3)] == [("rope", Window("sliding", 16))] * 3
    assert build_encoding("rope_swa", ModelShape(32, 4, 3, 64), {"window": 8}).at(2).window(2) == Window("sliding", 8)
    keys = Window("sliding", 16).keys_seen(40)
    assert torch.equal(keys[15:], torch.full((25,), 16))  # past the window every query sees 16 keys
