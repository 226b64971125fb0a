"""Attention diagnostics: per layer and head, how far attention reaches and how spread it is.

For query i with attention weights p_ij over keys j <= i:

    mean attention distance  d_i = sum_j p_ij (i - j)        (tokens; 0 = attends to itself)
    attention entropy        H_i = -sum_j p_ij ln p_ij        (nats; ln(i + 1) = uniform over its keys)

each averaged over the queries of the windows given. An encoding that stays flat past its training
length by attending locally keeps d small as L grows; one whose attention dilutes shows H rising
towards ln L. The weights are recomputed from each layer's queries and keys (after rotation, with
the encoding's bias and the variant's temperature) one block of queries at a time, so no L x L
matrix is held at long lengths (layers with a window, a sink or a content-dependent term report
the weights their kernel computed: ``add_weights``). Encodings with content-position terms (Shaw, Transformer-XL)
compute attention inside ``relative_attention`` and are not covered.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from posbench.attention.kernels import BiasFn, future_mask, query_chunks
from posbench.attention.options import AttentionOptions
from posbench.core.device import autocast

MAX_ELEMENTS = 1 << 22  # scores held at once (batch x heads x queries x keys)


class AttentionRecorder:
    """Collects sums of d_i and H_i per (layer, head) from every forward it is attached to."""

    def __init__(self, n_layers: int, n_heads: int):
        self.distance = np.zeros((n_layers, n_heads))
        self.entropy = np.zeros((n_layers, n_heads))
        self.queries = np.zeros(n_layers)

    @torch.no_grad()
    def add(self, layer: int, q: torch.Tensor, k: torch.Tensor, scale: float | None, bias_fn: BiasFn | None,
            positions: torch.Tensor, block: int | None = None) -> None:
        B, H, L, Dh = q.shape
        scale = Dh ** -0.5 if scale is None else scale
        for start, end in query_chunks(q.shape, MAX_ELEMENTS):
            s = torch.einsum("bhid,bhjd->bhij", q[:, :, start:end].float(), k[:, :, :end].float()) * scale
            if bias_fn is not None:
                s = s + bias_fn(positions[start:end], positions[:end]).float()
            s = s.masked_fill(future_mask(start, end, q.device, block), float("-inf"))
            logp = torch.log_softmax(s, dim=-1)
            p = logp.exp()
            dist = (torch.arange(start, end, device=q.device)[:, None] - torch.arange(end, device=q.device)[None, :]).clamp(min=0)
            self.distance[layer] += (p * dist).sum(dim=(-1, -2)).sum(0).double().cpu().numpy()
            self.entropy[layer] -= torch.nan_to_num(p * logp).sum(dim=(-1, -2)).sum(0).double().cpu().numpy()
            self.queries[layer] += B * (end - start)

    @torch.no_grad()
    def add_weights(self, layer: int, p: torch.Tensor, start: int, end: int, lo: int) -> None:
        """The same sums from attention weights p [B, H, end - start, end - lo] computed by the kernel
        itself (posbench.attention.kernels.masked_attention: windows, sinks, content-dependent terms), for
        queries [start, end) and keys [lo, end). With a sink, p sums to less than 1 over the keys."""
        p = p.float()
        dist = (torch.arange(start, end, device=p.device)[:, None] - torch.arange(lo, end, device=p.device)[None, :]).clamp(min=0)
        self.distance[layer] += (p * dist).sum(dim=(-1, -2)).sum(0).double().cpu().numpy()
        self.entropy[layer] -= torch.nan_to_num(p * p.log()).sum(dim=(-1, -2)).sum(0).double().cpu().numpy()
        self.queries[layer] += p.shape[0] * (end - start)

    def records(self) -> list[dict]:
        n_layers, n_heads = self.distance.shape
        return [{"layer": layer, "head": head, "mean_distance": float(self.distance[layer, head] / self.queries[layer]),
                 "entropy": float(self.entropy[layer, head] / self.queries[layer])}
                for layer in range(n_layers) for head in range(n_heads) if self.queries[layer]]


@torch.inference_mode()
def attention_stats(model, inputs: list[torch.Tensor], device, positions: torch.Tensor | None = None,
                    options: AttentionOptions = AttentionOptions()) -> list[dict]:
    """Per layer and head: mean attention distance and entropy over the queries of ``inputs``
    (batches [B, L] of one length), run through the model with ``options`` (the recorder joins
    them for these forwards only)."""
    recorder = AttentionRecorder(model.cfg.n_layers, model.cfg.n_heads)
    for x in inputs:
        with autocast(device):
            model(x.to(device), positions, options.replace(recorder=recorder))
    return recorder.records()  # empty for encodings with their own relative attention


def uniform_entropy(length: int) -> float:
    """Mean over queries i = 0..L-1 of ln(i + 1): the entropy of attention spread evenly over every key."""
    return float(np.mean(np.log(np.arange(1, length + 1)))) if length > 0 else math.nan
