"""PaTH's attention logits: queries and keys joined by a product of data-dependent Householder-like
matrices, computed chunk by chunk (Yang et al. 2025, arXiv 2505.16381, section 3).

    H_t = I - beta_t w_t w_t^T                         (||w_t|| = 1, beta_t in (0, 2))
    s_ij = q_i^T H_i H_{i-1} ... H_{j+1} k_j           (j < i; s_ii = q_i^T k_i)

No token loop: the sequence is cut into chunks of C tokens and a chunk's product is written in the
WY / UT-transform form, H_{C-1} ... H_0 = I - W^T T diag(beta) W with T = (I + A)^-1,
A = strictly_lower(diag(beta) W W^T) (one triangular solve per chunk). From it, per chunk:

    local  s_ij for i, j in the chunk             (q k^T).tril() - tril(q W^T) T strictly_lower(diag(beta) W k^T)
    q_in   q_i carried back to the chunk start    H_start ... H_i q_i
    k_out  k_j carried forward to the chunk end   H_end ... H_{j+1} k_j
    carry  the whole chunk's product (D x D)      H_end ... H_start

and across chunks, s_ij = q_in_i^T carry_{a-1} ... carry_{b+1} k_out_j for query chunk a and key
chunk b < a: one step per chunk distance, each a batched matrix product over every query chunk.
Reference code: flash-linear-attention ``fla/ops/path_attn/naive.py`` (``naive_path_attn``, MIT:
the same quantities, ``T_mat`` by forward substitution, ``A_local``, ``q - qw @ Twb``,
``k - Twbk^T @ w``, ``H_mat``, and a loop over query and key chunks); here ``T`` is one
``solve_triangular`` and the key-chunk loop runs over distances, batched over query chunks.

Cost: per query block, the logits [B, H, queries, keys] (what softmax attention holds anyway) plus
O(n_chunks) small matrix products; the whole sequence's per-chunk quantities are O(L C + L D).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class HouseholderChunks:
    """The per-chunk quantities of one layer's PaTH logits (float32 at least; padded to whole chunks)."""

    chunk: int
    local: torch.Tensor  # [B, H, n, C, C] s_ij within a chunk (j <= i; 0 above the diagonal)
    q_in: torch.Tensor  # [B, H, n, C, D] queries carried back to their chunk's start
    k_out: torch.Tensor  # [B, H, n, C, D] keys carried forward to their chunk's end
    carry: torch.Tensor  # [B, H, n, D, D] row form: r @ carry[c] = (H_end ... H_start)^T r


def householder_chunks(q: torch.Tensor, k: torch.Tensor, w: torch.Tensor, beta: torch.Tensor,
                       chunk: int) -> HouseholderChunks:
    """q, k, w: [B, H, L, D] (w of unit norm), beta: [B, H, L] -> the chunks' quantities."""
    B, H, L, D = q.shape
    pad = -L % chunk
    dtype = torch.promote_types(q.dtype, torch.float32)  # float32 at least (bf16 under autocast would lose H's products)
    q, k, w = (F.pad(t.to(dtype), (0, 0, 0, pad)) for t in (q, k, w))
    beta = F.pad(beta.to(dtype), (0, pad))  # padded tokens: beta 0, H = I (and they are never read)
    n, C = (L + pad) // chunk, chunk
    q, k, w = (t.view(B, H, n, C, D) for t in (q, k, w))
    wb = w * beta.view(B, H, n, C, 1)
    eye = torch.eye(C, dtype=dtype, device=q.device)
    strictly_lower = torch.ones(C, C, dtype=torch.bool, device=q.device).tril(-1)
    a = (wb @ w.transpose(-1, -2)) * strictly_lower
    t = torch.linalg.solve_triangular(eye + a, eye.expand_as(a), upper=False, unitriangular=True)
    twb = t @ wb  # [.., C, D]
    twbk = t @ ((wb @ k.transpose(-1, -2)) * strictly_lower)  # [.., C, C]
    qw = (q @ w.transpose(-1, -2)).tril()
    local = (q @ k.transpose(-1, -2)).tril() - qw @ twbk
    q_in = q - qw @ twb
    k_out = k - twbk.transpose(-1, -2) @ w
    carry = torch.eye(D, dtype=dtype, device=q.device) - w.transpose(-1, -2) @ twb
    return HouseholderChunks(chunk, local, q_in, k_out, carry)


def householder_logits(ch: HouseholderChunks, start: int, end: int, lo: int) -> torch.Tensor:
    """s_ij (unscaled) for queries [start, end) and keys [lo, end): [B, H, end - start, end - lo];
    pairs with j > i hold 0 (the caller's mask removes them)."""
    C = ch.chunk
    a0, a1, b0 = start // C, (end - 1) // C + 1, lo // C
    na, nb = a1 - a0, a1 - b0
    B, H = ch.local.shape[:2]
    blocks = ch.local.new_zeros(B, H, na, nb, C, C)
    rows = torch.arange(a0, a1, device=blocks.device)
    blocks[:, :, rows - a0, rows - b0] = ch.local[:, :, a0:a1]
    r = ch.q_in[:, :, a0:a1]  # for query chunk a: q_in carried through chunks a-1 ... a-s+1
    for s in range(1, a1 - b0):
        first = max(0, b0 + s - a0)  # the query chunks with a key chunk s back inside [b0, a)
        if first >= na:
            break
        a = rows[first:]
        blocks[:, :, a - a0, a - s - b0] = r[:, :, first:] @ ch.k_out[:, :, a - s].transpose(-1, -2)
        r = torch.cat((r[:, :, :first], r[:, :, first:] @ ch.carry[:, :, a - s]), dim=2)
    full = blocks.permute(0, 1, 2, 4, 3, 5).reshape(B, H, na * C, nb * C)
    return full[:, :, start - a0 * C:end - a0 * C, lo - b0 * C:end - b0 * C]
