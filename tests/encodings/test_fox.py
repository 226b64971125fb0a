"""FoX (posbench/encodings/fox.py): the bias is the sum of log forget gates between key and query."""

import math

import torch
import torch.nn.functional as F

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
