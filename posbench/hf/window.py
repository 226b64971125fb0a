"""The far-context control ``<family>+swaL`` on a checkpoint: every layer attends within a sliding window of
L keys (L: the checkpoint's context length), by index, as posbench's ``local`` variant does for its own
models (posbench/evaluation/variants/local.py; posbench/attention/kernels.py ``Window``: query i sees keys
i - L < j <= i, HF's ``sliding_window`` convention). The report pairs each row ``x`` with ``x+swaL``: the
far-context gain and the key tokens (posbench/report/key_tokens/).

It goes through transformers' own attention-function registry (``AttentionInterface``), not a copied
modeling file: an attention function named ``posbench_window`` is registered once and the model is
switched to it (``set_attn_implementation``) for the row, then back. transformers builds no mask for an
implementation without a registered mask function, so the function builds its own (causal and the
window; posbench's windows hold no padding). A layer with a sliding window of its own (Mistral's, Gemma's)
keeps the narrower of the two, as posbench's variant leaves a layer's own window alone. A family whose
attention does not call the registry is refused in one line after its first forward; so is one with
logit soft-capping, which this function does not compute. A learned sink logit per head (gpt-oss's
``sinks``) joins every denominator, as the model's own attention adds it (posbench's ``masked_attention``,
the kernel of posbench's ``sink`` encoding).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.nn.functional as F

from posbench.attention.kernels import Window, masked_attention
from posbench.core.errors import PosbenchError
from posbench.hf.attention import one_head_per_query, registered_attention

NAME = "posbench_window"
SUFFIX = "+swaL"  # posbench's WINDOW_CONTROL (evaluation/variants/local.py): the report pairs rows by it

_state = {"size": None, "calls": 0}


def window_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers' attention-function signature: q [B, H, Lq, D], k/v [B, Hkv, Lk, D] -> ([B, Lq, H, D], None)."""
    if kwargs.get("softcap") is not None:
        raise PosbenchError(f"{type(module).__name__}: +swaL does not compute logit soft-capping")
    _state["calls"] += 1
    size = _state["size"]
    own = kwargs.get("sliding_window") or getattr(module, "sliding_window", None)
    if isinstance(own, int) and own > 0:
        size = min(size, own)
    key, value = one_head_per_query(query, key, value)
    lq, lk = query.shape[2], key.shape[2]
    sinks = getattr(module, "sinks", None)
    if sinks is not None:  # gpt-oss: a learned sink logit per head in every denominator (posbench's ``sink``)
        if lq != lk:
            raise PosbenchError(f"{type(module).__name__}: +swaL with attention sinks is scored in one forward per "
                                f"window, not with a cache ({lq} queries, {lk} keys)")
        out = masked_attention(query, key, value, scaling, window=Window("sliding", size), sink=sinks)
        return out.transpose(1, 2).contiguous(), None
    q = torch.arange(lk - lq, lk, device=query.device)[:, None]
    k = torch.arange(lk, device=query.device)[None, :]
    visible = (k <= q) & (k > q - size)
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=visible, scale=scaling)
    return out.transpose(1, 2).contiguous(), None



@contextmanager
def windowed_model(model, size: int | None):
    """The model attending within ``size`` keys for the block (None: unchanged)."""
    if size is None:
        yield model
        return
    with registered_attention(model, NAME, window_attention, "+swaL"):
        _state["size"], _state["calls"] = int(size), 0
        try:
            yield model
        finally:
            _state["size"] = None


def check_windowed() -> None:
    """After a forward under ``windowed_model``: the model's attention went through the registry."""
    if _state["calls"] == 0:
        raise PosbenchError("this family's attention does not go through transformers' AttentionInterface: "
                            "+swaL cannot be applied to it")
