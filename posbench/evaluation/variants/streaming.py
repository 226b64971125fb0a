"""Rows ``rope+streaming``: StreamingLLM (Xiao et al. 2024, "Efficient Streaming Language Models with
Attention Sinks", arXiv 2309.17453; mit-han-lab/streaming-llm ``kv_cache.py`` StartRecentKVCache and
``pos_shift/modify_llama.py``), training-free. The reference decodes token by token with a KV cache
that keeps the first S tokens (the attention sinks, ``start_size``) and the R most recent
(``recent_size``), evicting the middle, and rotates every cached key at its position *in the cache*
(keys are cached unrotated; the query sits at the cache's next position). For query i that is, with
C = S + R the cache size:

    i <= C:  every key j <= i, at its own position (nothing evicted yet)
    i >  C:  sinks j < S:            logit_ij = q_i R(C - j) k_j      (query at cache position C)
             recent i - R <= j <= i: logit_ij = q_i R(i - j) k_j      (contiguous in the cache)
             S <= j < i - R:         not seen (evicted)

Token-by-token decoding with such a cache computes each token's hidden states once, from what its
own cache held, so one parallel forward pass with these per-pair positions and this mask gives the
same numbers (tests/evaluation/variants/test_streaming.py checks it against a literal cache loop). Two pieces in the
query-chunked piecewise kernel (posbench/attention/kernels.py), as ReRoPE.

Toy scale: S = 4 (the paper's four sink tokens; a token count, not scaled) and R = train_len - S - 1
by default, so a query sees train_len keys (the sinks, R recent keys and itself) and every distance
stays below train_len: the reference README's rule that the cache is at most the pre-training window. The
``+swaL`` row (the ``local`` variant) is the paper's window-attention baseline at the same key count
with no sinks kept. A window by construction (the middle is never seen), so its rows are reported
apart with the windowed controls. A RoPE model whose softmax has its own terms keeps them
(RotaryExtender.attend): a gpt-oss sink logit in every denominator, SSMax's temperature with n the keys in
the cache. Deviations: RoPE models only (the reference's MPT/ALiBi path, which builds ALiBi's bias from
positions in the cache, is not built); the query's position within the cache is read by
index, as posbench's windows are (positions 0..L-1 in every evaluation window).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from posbench.core.errors import PosbenchError
from posbench.core.params import at_least, param, positive
from posbench.evaluation.variants import register
from posbench.evaluation.variants.extender import RotaryExtender


@register("streaming")
class StreamingLLM(RotaryExtender):
    window = True  # the evicted middle is never seen: its rows are windowed, reported apart

    @dataclass
    class Params:
        # S, the reference's start_size (4 in the paper and run_streaming_llama.py); 0: window attention with
        # positions shifted into the cache
        sinks: int = param(4, at_least(0))
        recent: Optional[int] = param(None, positive)  # R, recent_size; None: train_len - sinks - 1

    def suffix(self) -> str:
        p = self.params
        return "+streaming" + (f"s{p.sinks}" if p.sinks != 4 else "") + (f"r{p.recent}" if p.recent is not None else "")

    def recent(self, train_len: int) -> int:
        """R: the setting, else train_len - S - 1 (a query then sees train_len keys)."""
        return self.params.recent if self.params.recent is not None else train_len - self.params.sinks - 1

    def cache(self, train_len: int) -> tuple[int, int]:
        """(S, R): sinks and recent keys kept."""
        if reason := self.no_cache(train_len):
            raise PosbenchError(f"streaming: {reason}")
        return self.params.sinks, self.recent(train_len)

    def no_cache(self, train_len: int) -> str | None:
        """Why no cache fits (only the default R can fall below 1: a set R is checked positive), or None."""
        if self.recent(train_len) < 1:
            return (f"{self.params.sinks} sinks leave no recent keys at train_len {train_len} "
                    f"(sinks below {train_len - 1}, or give recent)")
        return None

    def undefined_for(self, encoding, length: int) -> str | None:
        return self.no_cache(encoding.shape.train_len)  # a row without scores and this reason, not a failed run

    def pieces(self, positions, train_len):
        sinks, recent = self.cache(train_len)
        full = sinks + recent
        own = (positions, positions, None)
        # past the first eviction a sink's key sits at its own cache position and the query at C
        shifted = (torch.full_like(positions, int(positions[0]) + full), positions,
                   lambda i, j: (i > full) & (j < sinks))
        return [own, shifted]

    def hidden(self, positions, train_len):
        sinks, recent = self.cache(train_len)
        full = sinks + recent
        return lambda i, j: (i > full) & (j >= sinks) & (j < i - recent)
