"""Effective remembrance: how much a model's prediction at the end of a long window still depends on
the window's first tokens.

Buitrago Ruiz & Gu 2025, "Understanding and Improving Length Generalization in Recurrent Models"
(arXiv 2507.02782, section 3): for a sequence x_0 .. x_{T-1} and the model's next-token distribution q,

    EffRem_T(t) = TV( q(. | x_0 .. x_{T-1}),  q(. | x_t .. x_{T-1}) ),    TV(p, p') = 1/2 sum_v |p(v) - p'(v)|

the distance between the prediction after the whole window and after the window with its first t tokens
removed (the truncated window is a new sequence: its first kept token sits at position 0, as in the
paper). EffRem_T(0) = 0; a model that forgets smoothly has EffRem near 0 for small t (the far past
barely matters) and rising as t nears T (the recent tokens do); the paper's failing recurrent models
have a large EffRem at small t: the prediction hangs on the first tokens, past the training length.
For positional encodings it reads the same way: a flat 16x perplexity with EffRem ~ 0 until the last
train_len tokens is a model that ignores what lies beyond its window (posbench's window control says the
same in perplexity); one that uses far context has EffRem > 0 further back.

Deviations from the paper, and why: the paper averages over sequences of a long-document corpus at one
T per plot; here the windows are drawn from the run's validation documents (whole windows inside one
document where documents are long enough, else from the stream across separators: ``windows``), T is a
multiple of train_len, and t runs over a grid of cuts (the paper plots every t); the interval beside the
mean (posbench/jobs/effective_remembrance.py) resamples seeds and windows. The paper's reference code is
not public at the time of writing (goombalab's blog post describes the same formula).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from posbench.data.corpus import documents


def cut_grid(T: int, n_cuts: int, train_len: int) -> list[int]:
    """Cuts t in [0, T): ``n_cuts`` evenly spaced values from 0 plus T - train_len (where the kept part
    is exactly one training length: left of it the prediction may lean on beyond-window tokens) and the
    cuts that keep 1/2, 1/4, .. of train_len (the near past), sorted, without repeats."""
    if T <= 1 or n_cuts < 2:
        raise ValueError(f"EffRem needs T >= 2 and at least 2 cuts (got T={T}, n_cuts={n_cuts})")
    grid = {int(round(i * (T - 1) / (n_cuts - 1))) for i in range(n_cuts)}
    if T > train_len:
        grid.add(T - train_len)
    kept = train_len // 2
    while kept >= 1:
        grid.add(T - kept)
        kept //= 2
    return sorted(t for t in grid if 0 <= t < T)


def windows(val: np.ndarray, separator: bytes, T: int, n: int) -> tuple[np.ndarray, bool]:
    """``n`` windows of T tokens from the validation tokens ``val``: (windows [n, T], inside_documents).
    Spread over the documents at least T long (round robin, evenly spaced within each); where fewer
    than one such document exists, evenly spaced over the whole stream (across separators: said by
    ``inside_documents`` False). Deterministic: no random draw."""
    if len(val) < T:
        raise ValueError(f"the validation split holds {len(val)} tokens, fewer than one window of {T}")
    starts_doc, ends_doc = documents(val, separator) if separator else (np.array([0]), np.array([len(val)]))
    long_docs = [(int(s), int(e)) for s, e in zip(starts_doc, ends_doc) if e - s >= T]
    if long_docs:
        per_doc = [0] * len(long_docs)
        for i in range(n):
            per_doc[i % len(long_docs)] += 1
        starts = []
        for (s, e), k in zip(long_docs, per_doc):
            if k:
                starts.extend(int(round(x)) for x in np.linspace(s, e - T, k + 2)[1:-1])  # k interior points
        starts = starts[:n]
        inside = True
    else:
        starts = [int(round(x)) for x in np.linspace(0, len(val) - T, n)]
        inside = False
    return np.stack([np.asarray(val[s:s + T], dtype=np.int64) for s in starts]), inside


def total_variation(logits_a: torch.Tensor, logits_b: torch.Tensor) -> torch.Tensor:
    """TV distance between the softmax distributions of two [..., V] logit tensors -> [...]."""
    p = torch.softmax(logits_a.float(), dim=-1)
    q = torch.softmax(logits_b.float(), dim=-1)
    return 0.5 * (p - q).abs().sum(dim=-1)


@torch.no_grad()
def effective_remembrance(model: torch.nn.Module, x: torch.Tensor, cuts: Sequence[int],
                          batch: int = 8) -> np.ndarray:
    """EffRem_T(t) for each window of ``x`` [n, T] (token ids) and each cut t in ``cuts``:
    an array [len(cuts), n]. The model is put in eval mode (no dropout) and called as posbench's
    LanguageModel (token ids -> logits [B, L, V]), positions from 0 for every truncated window."""
    model.eval()
    n, T = x.shape
    device = next(model.parameters()).device
    out = np.zeros((len(cuts), n))

    def last_logits(inputs: torch.Tensor) -> torch.Tensor:
        parts = [model(inputs[i:i + batch].to(device))[:, -1] for i in range(0, len(inputs), batch)]
        return torch.cat(parts)

    full = last_logits(x)
    for j, t in enumerate(cuts):
        if not 0 <= t < T:
            raise ValueError(f"cut t={t} outside [0, {T})")
        out[j] = 0.0 if t == 0 else total_variation(full, last_logits(x[:, t:])).cpu().numpy()
    return out
