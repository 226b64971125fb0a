"""RNoPE-SWA / SWAN-GPT (posbench/encodings/rnope_swa.py): three RoPE sliding-window layers, then a global
NoPE layer, repeated."""

from posbench.attention.kernels import Window
from posbench.encodings import ModelShape, build_encoding


def test_three_windowed_rope_layers_then_one_global_nope_layer():
    from posbench.encodings.rnope_swa import RNoPESWA

    enc = build_encoding("rnope_swa", ModelShape(32, 4, 8, 64))
    assert isinstance(enc, RNoPESWA)
    layers = [(getattr(enc.at(i), "part", enc.at(i)).name, enc.at(i).window(i)) for i in range(8)]
    assert layers == ([("rope", Window("sliding", 16))] * 3 + [("nope", None)]) * 2
    assert enc.takes_row_temperature()  # the global layers take SWAN-GPT's logn row (eval.variants=[logn])
