"""EffRem_T(t) (Buitrago Ruiz & Gu 2025): the total variation between the last prediction of a window and
of the window without its first t tokens; 0 where the removed tokens cannot matter, the exact distance
where they decide the prediction."""

import numpy as np
import pytest
import torch
from torch import nn

from posbench.evaluation.effective_remembrance import cut_grid, effective_remembrance, total_variation, windows
from tests.helpers import tiny_model

V = 7


class LastToken(nn.Module):
    """Logits from the last token only: a bigram model, which no removed prefix can move."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, V)

    def forward(self, idx):
        return self.emb(idx)


class FirstToken(nn.Module):
    """Logits of every position from the window's first token: removing it decides the prediction."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, V)

    def forward(self, idx):
        return self.emb(idx[:, :1]).expand(-1, idx.shape[1], -1)


def test_a_model_of_the_last_token_only_remembers_nothing_before_it():
    torch.manual_seed(0)
    x = torch.randint(0, V, (5, 12))
    tv = effective_remembrance(LastToken(), x, [0, 1, 6, 11])
    assert tv.shape == (4, 5)
    assert np.allclose(tv, 0.0, atol=1e-7)


def test_a_model_of_the_first_token_gives_the_distance_between_the_two_first_tokens():
    torch.manual_seed(0)
    model = FirstToken()
    x = torch.randint(0, V, (6, 10))
    tv = effective_remembrance(model, x, [0, 3])
    with torch.no_grad():
        p = torch.softmax(model.emb(x[:, 0]), -1)
        q = torch.softmax(model.emb(x[:, 3]), -1)
    expected = 0.5 * (p - q).abs().sum(-1).numpy()
    assert np.allclose(tv[0], 0.0)
    assert np.allclose(tv[1], expected, atol=1e-6)
    assert (tv[1][(x[:, 0] != x[:, 3]).numpy()] > 0).all()


def test_total_variation_is_a_distance_between_0_and_1():
    a, b = torch.randn(4, 9), torch.randn(4, 9)
    tv = total_variation(a, b)
    assert ((tv >= 0) & (tv <= 1)).all()
    assert torch.allclose(total_variation(a, a), torch.zeros(4))
    assert torch.allclose(tv, total_variation(b, a))
    hard = torch.tensor([[100.0, 0.0], [0.0, 100.0]])
    assert torch.allclose(total_variation(hard[:1], hard[1:]), torch.ones(1), atol=1e-6)


def test_a_causal_language_model_is_moved_by_its_prefix_and_not_at_t_0():
    model = tiny_model("rope", train_len=16)
    x = torch.randint(0, 256, (3, 32))
    tv = effective_remembrance(model, x, cut_grid(32, 5, 16))
    assert np.allclose(tv[0], 0.0) and (tv[1:] > 0).any() and (tv <= 1).all()


def test_the_cut_grid_holds_the_even_cuts_the_training_length_and_the_near_past():
    grid = cut_grid(1024, 17, 64)
    assert grid[0] == 0 and grid == sorted(set(grid)) and max(grid) < 1024
    assert {64, 512, 1024 - 64, 1024 - 32, 1024 - 1} <= set(grid)
    with pytest.raises(ValueError, match="at least 2 cuts"):
        cut_grid(1024, 1, 64)


def test_windows_lie_inside_documents_long_enough_else_across_the_stream():
    sep = b"\0"
    docs = [b"a" * 50, b"b" * 10, b"c" * 40]
    val = np.frombuffer(sep.join(docs), dtype=np.uint8)
    x, inside = windows(val, sep, 30, 4)
    assert inside and x.shape == (4, 30)
    assert all(len(set(w.tolist())) == 1 for w in x)  # each window is one document's letters
    assert {chr(w[0]) for w in x} == {"a", "c"}
    x, inside = windows(val, sep, 60, 3)
    assert not inside and x.shape == (3, 60)
    with pytest.raises(ValueError, match="fewer than one window"):
        windows(val, sep, 1000, 2)
