"""What posbench's attention functions for a checkpoint share (the window control, hf/window.py; the
extenders, hf/extenders.py): a model switched to a function registered in transformers' own registry
(``AttentionInterface``) for a block and back, and grouped-query keys and values given one head per query
head."""

from __future__ import annotations

from contextlib import contextmanager

import torch

from posbench.core.errors import PosbenchError


@contextmanager
def registered_attention(model, name: str, function, what: str):
    """The model attending through ``function`` (registered as ``name``) for the block, then as before;
    a model that cannot switch is refused in one line naming ``what`` it was to take."""
    from transformers import AttentionInterface

    AttentionInterface.register(name, function)
    before = model.config._attn_implementation
    try:
        model.set_attn_implementation(name)
    except (ValueError, NotImplementedError) as e:
        raise PosbenchError(f"{type(model).__name__} cannot take {what} through transformers' AttentionInterface "
                            f"({str(e).splitlines()[0][:120]})") from None
    try:
        yield model
    finally:
        model.set_attn_implementation(before)


def one_head_per_query(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor):
    """Grouped-query attention's keys and values [B, Hkv, L, D] repeated to the query's H heads."""
    if key.shape[1] != query.shape[1]:
        key = key.repeat_interleave(query.shape[1] // key.shape[1], dim=1)
        value = value.repeat_interleave(query.shape[1] // value.shape[1], dim=1)
    return key, value
