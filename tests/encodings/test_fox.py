"""FoX (posbench/encodings/fox.py): the bias is the sum of log forget gates between key and query."""

import math

import pytest
import torch
import torch.nn.functional as F

from posbench.encodings import ModelShape, build_encoding
from tests.helpers import attn_output, hf_visible, layer_inputs, model_of, naive

X = torch.Generator().manual_seed(1)


def test_fox_bias_is_the_sum_of_log_forget_gates_between_key_and_query():
    model = model_of("fox")
    x = torch.randint(0, 256, (2, 18), generator=X)
    a, q, k, v = layer_inputs(model, x, 2)
    log_f = F.logsigmoid(model.encoding.fgate[2](a)).transpose(1, 2)  # [B, H, L]
    L = 18
    D = torch.zeros(2, 4, L, L, dtype=torch.float64)
    for i in range(L):
        for j in range(i + 1):
            D[:, :, i, j] = log_f[:, :, j + 1 : i + 1].sum(-1)  # sum_{t=j+1}^{i} log f_t
    y = naive(q @ k.transpose(-1, -2) / math.sqrt(8) + D, v, hf_visible(None, None, L))
    torch.testing.assert_close(attn_output(model, x, 2), model.blocks[2].attn.proj(y.transpose(1, 2).reshape(2, L, 32)))


def test_at_the_authors_initialisation_every_forget_gate_is_one_half():
    """Gate bias 0: on a zero input every ln f_t is ln 1/2, so the forget term of a key d tokens back
    is d ln 1/2 (about 1e-6 of the attention at 20 tokens, as the encoding's note says)."""
    from posbench.encodings.fox import ForgettingTransformer

    enc = build_encoding("fox", ModelShape(32, 4, 2, 16))
    assert isinstance(enc, ForgettingTransformer)
    x = torch.zeros(1, 24, 32)
    torch.testing.assert_close(enc.log_forget(x, 1), torch.full((1, 4, 24), math.log(0.5)))
    term = enc.content_bias(x, None, None, 1)(torch.zeros(1, 4, 24, 24), 0, 24, 0, None)[0, 0]
    i, j = torch.arange(24)[:, None], torch.arange(24)[None, :]
    torch.testing.assert_close(term[i >= j], ((i - j) * math.log(0.5)).float()[i >= j])
    assert math.exp(term[20, 0].item()) == pytest.approx(0.5 ** 20) and 0.5 ** 20 < 1e-6
