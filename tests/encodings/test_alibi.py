"""ALiBi (posbench/encodings/alibi.py): the paper's slopes and a bias that decreases with distance."""

import pytest
import torch

from posbench.encodings import ModelShape, build_encoding
from posbench.encodings.alibi import alibi_slopes


def test_alibi_slopes_match_the_paper():
    assert torch.allclose(alibi_slopes(8), torch.tensor([2.0 ** -(i + 1) for i in range(8)]))
    # 6 heads: the 4-head slopes, then every other slope of the 8-head sequence
    expected = [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8, 2 ** -1, 2 ** -3]
    assert torch.allclose(alibi_slopes(6), torch.tensor(expected))
    assert len(alibi_slopes(12)) == 12


def test_alibi_bias_is_zero_on_diagonal_and_decreases_with_distance():
    enc = build_encoding("alibi", ModelShape(32, 4, 1, 16))
    b = enc.bias(torch.tensor([20]), torch.arange(20, 10, -1), 0)[:, 0]  # [H, distances 0..9]
    assert torch.all(b[:, 0] == 0)
    assert torch.all(b[:, 1:] < b[:, :-1])


def test_alibi_on_the_first_heads_only_as_x_transformers_alibi_num_heads():
    """encoding.num_heads=k: the first k heads take a k-head ALiBi's slopes, the others no bias at all
    (x-transformers pads the k-head bias with zeros)."""
    enc = build_encoding("alibi", ModelShape(64, 8, 1, 16), {"num_heads": 4})
    b = enc.bias(torch.tensor([20]), torch.arange(20, 10, -1), 0)[:, 0]  # [H, distances 0..9]
    assert torch.allclose(b[:4], -alibi_slopes(4)[:, None] * torch.arange(10.0))
    assert torch.all(b[4:] == 0)
    full = build_encoding("alibi", ModelShape(64, 8, 1, 16))
    assert torch.equal(full.slopes, alibi_slopes(8))  # the default: every head, as before


def test_more_alibi_heads_than_the_model_has_is_one_line():
    from posbench.core.errors import PosbenchError

    with pytest.raises(PosbenchError, match="encoding.num_heads=5 is more than the model's 4 heads"):
        build_encoding("alibi", ModelShape(32, 4, 1, 16), {"num_heads": 5})


def test_a_default_num_heads_leaves_alibi_run_ids_alone(compose):
    """Ids computed before encoding.num_heads existed; a subset of heads is another run."""
    assert compose("encoding=alibi", "train_len=128", "seed=2").run_id == "alibi_small_L128_s2_9dde0697e5"
    assert compose("encoding=alibi", "encoding.num_heads=null", "train_len=128", "seed=2").run_id == \
        "alibi_small_L128_s2_9dde0697e5"
    assert compose("encoding=alibi", "encoding.num_heads=2", "train_len=128", "seed=2").run_id != \
        "alibi_small_L128_s2_9dde0697e5"
