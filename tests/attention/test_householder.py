"""PaTH's chunked Householder logits (posbench/attention/householder.py) against a copy of the
reference's naive algorithm (flash-linear-attention ``fla/ops/path_attn/naive.py``,
``naive_path_attn``, MIT) and against the explicit matrix product, step by step."""

import pytest
import torch
import torch.nn.functional as F

from posbench.attention.householder import householder_chunks, householder_logits


def naive_path_attn(q, k, v, w, beta, g, scale, chunk_size=64):
    """A copy of FLA's ``naive_path_attn`` (q, k, v, w: [B, T, H, D]; beta, g: [B, T, H]), with
    einops' rearrange written as view / reshape and the grouped-query expansion left out (HQ == H)."""
    original_dtype = q.dtype
    BT = chunk_size
    q, k, v, w, beta, g = map(lambda x: x.to(torch.float).transpose(1, 2), [q, k, v, w, beta, g])
    g_cumsum = g.cumsum(-1)
    b, h, l, d = q.shape
    if l % BT != 0:
        padding_size = BT - l % BT
        q, k, w = map(lambda x: F.pad(x, (0, 0, 0, padding_size)), [q, k, w])
        beta = F.pad(beta, (0, padding_size))
    seq_len = q.shape[2]
    w_beta = w * beta[..., None]
    q, k, w, w_beta = map(lambda x: x.reshape(b, h, seq_len // BT, BT, d), [q, k, w, w_beta])
    mask = torch.triu(torch.ones(BT, BT, dtype=torch.bool, device=q.device), diagonal=0)
    T_mat = -(w_beta @ w.transpose(-1, -2)).masked_fill(mask, 0)
    for i in range(1, BT):
        T_mat[..., i, :i] = T_mat[..., i, :i].clone() + (T_mat[..., i, :, None].clone() * T_mat[..., :, :i].clone()).sum(-2)
    T_mat = T_mat + torch.eye(BT, dtype=q.dtype, device=q.device)
    Twbk = T_mat @ (w_beta @ k.transpose(-1, -2)).masked_fill(mask, 0)
    qw = (q @ w.transpose(-1, -2)).tril()
    Twb = T_mat @ w_beta
    A_local = (q @ k.transpose(-1, -2)).tril() - qw @ Twbk
    q = q - qw @ Twb
    k = k - Twbk.transpose(-1, -2) @ w
    H_mat = w.transpose(-1, -2) @ Twb
    A = torch.zeros(b, h, seq_len, seq_len, device=q.device)
    q, k, w, w_beta = map(lambda x: x.reshape(b, h, seq_len, d), [q, k, w, w_beta])
    for i in range(0, seq_len, BT):
        q_i = q[:, :, i:i + BT].clone()
        for j in range(i - BT, -BT, -BT):
            k_j = k[:, :, j:j + BT]
            A_ij = q_i @ k_j.transpose(-1, -2)
            A[:, :, i:i + BT, j:j + BT] = A_ij
            q_i = q_i - q_i @ H_mat[:, :, j // BT]
    for i in range(0, seq_len // BT):
        A[:, :, i * BT:i * BT + BT, i * BT:i * BT + BT] = A_local[:, :, i]
    A = A.masked_fill_(~torch.tril(torch.ones(seq_len, seq_len, device=q.device, dtype=torch.bool)), float("-inf"))
    A = A[:, :, :l, :l]
    A = A + g_cumsum[..., None] - g_cumsum[..., None, :]
    ref_o = (A * scale).softmax(-1).to(v) @ v
    return ref_o.to(original_dtype).transpose(1, 2)


def inputs(B=2, H=3, L=37, D=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, L, D, generator=gen) for _ in range(3))
    w = F.normalize(torch.randn(B, H, L, D, generator=gen), dim=-1)
    beta = 2 * torch.rand(B, H, L, generator=gen)  # (0, 2): negative eigenvalues too, as the reference allows
    return q, k, v, w, beta


def explicit_logits(q, k, w, beta):
    """s_ij = q_i^T H_i H_{i-1} ... H_{j+1} k_j, the matrices multiplied one by one (float64)."""
    q, k, w, beta = (t.double() for t in (q, k, w, beta))
    B, H, L, D = q.shape
    out = torch.zeros(B, H, L, L, dtype=torch.float64)
    eye = torch.eye(D, dtype=torch.float64)
    for i in range(L):
        p = eye.expand(B, H, D, D)
        for j in range(i, -1, -1):
            out[:, :, i, j] = (q[:, :, i, None, :] @ p @ k[:, :, j, :, None])[..., 0, 0]
            p = p @ (eye - beta[:, :, j, None, None] * w[:, :, j, :, None] * w[:, :, j, None, :])
    return out


@pytest.mark.parametrize("chunk", [1, 4, 8, 16, 64])
def test_the_chunked_logits_are_the_product_of_the_householder_matrices(chunk):
    q, k, _, w, beta = inputs(L=21)
    want = explicit_logits(q, k, w, beta)
    got = householder_logits(householder_chunks(q, k, w, beta, chunk), 0, 21, 0)
    causal = torch.ones(21, 21, dtype=torch.bool).tril()
    assert (got.double() - want)[..., causal].abs().max() < 1e-4


@pytest.mark.parametrize("start, end, lo", [(5, 17, 3), (16, 21, 9), (0, 8, 0), (20, 21, 20)])
def test_any_block_of_queries_and_keys_gives_the_same_logits(start, end, lo):
    """masked_attention asks for one block of queries at a time, against the keys its window reaches."""
    q, k, _, w, beta = inputs(L=21)
    chunks = householder_chunks(q, k, w, beta, 4)
    whole = householder_logits(chunks, 0, 21, 0)
    torch.testing.assert_close(householder_logits(chunks, start, end, lo), whole[:, :, start:end, lo:end],
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("chunk", [8, 16])
def test_attention_over_the_chunked_logits_matches_the_reference_naive_path_attn(chunk):
    q, k, v, w, beta = inputs(L=37)
    g = F.logsigmoid(torch.randn(2, 3, 37, generator=torch.Generator().manual_seed(1)))
    scale = q.shape[-1] ** -0.5
    t = lambda x: x.transpose(1, 2)  # noqa: E731 - the reference's [B, T, H, ...] layout
    ref = t(naive_path_attn(t(q), t(k), t(v), t(w), t(beta), t(g), scale, chunk_size=chunk))
    c = g.cumsum(-1)
    # the reference scales the forget term too: (q^T P k + c_i - c_j) * scale (so does its Triton kernel)
    s = (householder_logits(householder_chunks(q, k, w, beta, chunk), 0, 37, 0) + c[..., :, None] - c[..., None, :]) * scale
    s = s.masked_fill(~torch.ones(37, 37, dtype=torch.bool).tril(), float("-inf"))
    ours = s.softmax(-1) @ v
    err = (ours - ref).abs().max().item()
    assert err < 1e-5, err


def test_the_logits_train_without_a_token_loop():
    """Gradients flow to q, k, w and beta through the chunked form (the triangular solve included)."""
    q, k, _, w, beta = inputs(L=20)
    for t in (q, k, w, beta):
        t.requires_grad_(True)
    householder_logits(householder_chunks(q, k, w, beta, 8), 0, 20, 0).tril().square().sum().backward()
    assert all(t.grad is not None and t.grad.abs().sum() > 0 for t in (q, k, w, beta))
