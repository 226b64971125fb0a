"""The shared part of the training-free extenders (ReRoPE, SelfExtend, DCA, StreamingLLM: one module each): an
evaluation variant that replaces a RoPE model's attention with ``piecewise_rotary_attention``
(posbench/attention/kernels.py), where each pair (i, j) takes its rotary positions from one of a few maps.

The hook is ``AttentionOptions.attention`` (posbench/attention/options.py): the model calls it with q and k
not yet rotated; the extender rotates them at the positions its pieces say, through the encoding's own
``prepare``/``rotate`` (so a partial RoPE or an extension run's scaled frequencies rotate as they were
trained), and applies the encoding's softmax scale, its own softmax terms (a gpt-oss sink logit, SSMax's
temperature) and the row's temperature.
"""

from __future__ import annotations

from functools import partial

import torch

from posbench.attention.kernels import piecewise_rotary_attention
from posbench.attention.options import AttentionOptions
from posbench.evaluation.variants.base import Variant


class RotaryExtender(Variant):
    linestyle = "--"
    encoding_decides = True  # applies_to reads the encoding only (report/load.py asks it again)

    def applies_to(self, encoding) -> bool:
        # RoPE and partial RoPE (not xPos: its decay is centred), with their softmax's own terms where they
        # have them (SSMax's temperature, a sink logit: ``attend`` passes them to the kernel)
        return getattr(encoding, "rope_scalable", False)

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        return opts.replace(attention=partial(self.attend, train_len=train_len))

    # -- what a subclass says -------------------------------------------------------------------------
    def pieces(self, positions: torch.Tensor, train_len: int) -> list:
        """[(qpos [L], kpos [L], where(i, j) or None)], the first for every pair (posbench/attention/kernels.py)."""
        raise NotImplementedError

    def hidden(self, positions: torch.Tensor, train_len: int):
        """where(i, j) of the pairs a query must not see beyond the future (StreamingLLM's evicted
        keys), or None: every past key is seen."""
        return None

    def query_scale(self, positions: torch.Tensor, train_len: int) -> torch.Tensor | None:
        """A factor per query position on q (ReRoPE's log-n), or None."""
        return None

    def logit_factor(self, length: int, train_len: int) -> float:
        """A factor on every logit (DCA's mscale squared), 1 by default."""
        return 1.0

    # -- the attention -----------------------------------------------------------------------------------
    def attend(self, q, k, v, enc, positions, options: AttentionOptions, train_len: int, layer: int = 0):
        """The extender's attention of layer ``layer``: q, k [B, H, L, Dh] not yet rotated. The encoding's own
        softmax terms come along: SSMax's temperature with n the keys each query sees under this extender
        (its hidden pairs left out: under StreamingLLM at most train_len, the cache's size) and a sink logit
        (transformer.py ``temper`` and ``enc.sink`` in the plain path). A layer with a temperature of its own
        takes no temperature of the extender's (ReRoPE's log-n, DCA's mscale)."""
        plain = options.replace(attention=None)

        def rotate(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
            return enc.rotate(x, x, enc.prepare(pos, plain))[0]

        scale = enc.softmax_scale(enc.prepare(positions[:1], plain))
        scale = (q.shape[-1] ** -0.5 if scale is None else scale) * options.logit_scale
        hidden = self.hidden(positions, train_len)
        own = enc.query_scale(positions, keys_seen(len(positions), hidden, q.device), layer)
        if own is not None:  # the layer's own temperature (SSMax) ...
            q = (q * own.to(q.dtype)[..., None]).to(q.dtype)
        else:  # ... or the extender's (ReRoPE's log-n, DCA's mscale), never both: as in the plain path, where a
            # row temperature scales only the layers without one of their own (transformer.py temper)
            scale *= self.logit_factor(len(positions), train_len)
            if (qs := self.query_scale(positions, train_len)) is not None:
                q = q * qs.to(q.dtype)[:, None]
        return piecewise_rotary_attention(q, k, v, rotate, self.pieces(positions, train_len), scale,
                                          hidden=hidden, sink=enc.sink(layer))


def keys_seen(length: int, hidden, device=None, rows: int = 1024) -> torch.Tensor:
    """[length] the keys query i sees: j <= i, less those ``hidden(i, j)`` hides (None: i + 1), counted
    ``rows`` queries at a time."""
    i = torch.arange(length, device=device)
    if hidden is None:
        return i + 1
    j = i[None, :]
    return torch.cat([((j <= i[s:s + rows, None]) & ~hidden(i[s:s + rows, None], j)).sum(-1)
                      for s in range(0, length, rows)])
