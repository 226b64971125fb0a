"""posbench's training-free extenders on a checkpoint: rows ``<family>+rerope``, ``<family>+selfextend`` and
``<family>+streaming``, computed exactly as posbench's own variants compute them for its models
(posbench/evaluation/variants/rerope.py, selfextend.py, streaming.py: ReRoPE, bojone/rerope
``rerope_patch.py``; SelfExtend, datamllab/LongLM ``self_extend_patch/Llama.py``; StreamingLLM, arXiv
2309.17453, mit-han-lab/streaming-llm ``kv_cache.py`` and ``pos_shift/modify_llama.py``,
``modify_gpt_neox.py``). transformers implements none of them.

How, without a copied modeling file. Each of these methods rotates queries and keys at positions other
than their own (a clipped distance, grouped positions, positions in a cache), so its attention needs
q and k *before* the rotation, which a transformers model applies before it calls its attention
function. Two of transformers' own hooks give that:

* the model's rotary module (``rotary_emb``, the one module that makes every layer's cos/sin) is
  wrapped for the row: it still runs (a dynamic RoPE updates its frequencies as usual), its
  frequencies and attention scaling are read, and it hands the layers cos = 1, sin = 0, so
  ``apply_rotary_pos_emb`` leaves q and k as they are (on every channel, partial rotary included);
* an attention function named ``posbench_extender`` is registered (``AttentionInterface.register``) and
  the model switched to it (``set_attn_implementation``) for the row, then back, as the ``+swaL``
  control does (posbench/hf/window.py). It rotates q and k itself with posbench's rotation tables
  (posbench/encodings/rope.py ``rotation_tables``, ``apply_rotation``: the rotate-half layout of every
  family allowed here, on the first ``rotary_dim`` channels; GPT-NeoX's partial rotary passes the rest
  through) at the positions the native variant's pieces say, and runs posbench's kernel
  (posbench/attention/kernels.py ``piecewise_rotary_attention``) with the variant's own pieces, hidden
  pairs, query scale and logit factor: the same code, the same defaults (ReRoPE w = L_train / 4 with
  log-n query scaling; SelfExtend W = L_train / 4 and G the smallest with (L_train - W) G + W >= L;
  StreamingLLM S = 4 sinks and R = L_train - S - 1 recent keys), L_train the context length.

Frequencies. The rotary module's ``inv_freq`` and ``attention_scaling`` (a checkpoint shipped with a
scaling, e.g. Llama 3.1's llama3 or a YaRN config, keeps it: q and k rotated are multiplied by the
attention scaling as transformers' cos/sin are). Where the module is plain RoPE (``rope_type`` default)
its float32 ``inv_freq`` is recomputed in float64, base^(-2i/d), as posbench computes it: transformers
rounds the frequencies to float32, which at long windows moves the angles by ~1e-5 rad; with posbench's
the HF path's extender rows equal posbench's native ones to float64 rounding (tests/hf/test_extenders.py).

Which checkpoints. The families whose rotary layout (rotate half, the rotary channels first) and
attention call (``ALL_ATTENTION_FUNCTIONS``) are checked here: ``EXTENDABLE``. A checkpoint without
rotary positions (GPT-2, OPT), with no rotary channel (an exported NoPE), another family, RoPE
parameters per layer type or logit soft-capping is refused in one line naming what applies. gpt-oss's
learned sink logit per head joins every softmax (the kernel's ``sink``), and its half-width cos/sin tables
(one column per frequency, the same rotation) are read as the rotate-half layout. A layer's own sliding window (Mistral's ``sliding_window``) is kept: its keys further back are
hidden as the evicted middle of StreamingLLM is. Padding masks are not read (posbench's windows hold
none), and cached decoding (queries fewer than keys) is refused.

Deviations from the native variants: none in the formulas; the settings are the variants' defaults (no
``window``/``group``/``sinks``/``recent`` flags here); the row runs in the checkpoint's dtype (posbench's
kernel takes the softmax in float32 at least, as the native path does).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

from posbench.attention.kernels import piecewise_rotary_attention
from posbench.attention.rope_scalings import plain_frequencies
from posbench.core.errors import PosbenchError
from posbench.hf.attention import one_head_per_query, registered_attention
from posbench.encodings.rope import apply_rotation, rotation_tables
from posbench.evaluation.variants import Variant, make_variant
from posbench.hf.scalings import rotary_modules

NAME = "posbench_extender"
EXTENDERS = ("rerope", "selfextend", "streaming")  # posbench's variant names (evaluation/variants/)
# families whose rotary layout (rotate half on the first rotary_dim channels) and attention call are checked here
EXTENDABLE = ("llama", "mistral", "qwen2", "qwen3", "gpt_neox", "gpt_oss")

_state: dict = {"variant": None, "train_len": None, "tables": None, "calls": 0, "rotary_calls": 0}


def extenders(names: list[str], config, family: str) -> list[Variant]:
    """posbench's variants of ``names`` at their defaults, checked against the checkpoint (one line each)."""
    if not names:
        return []
    name = names[0]
    if bad := [n for n in names if n not in EXTENDERS]:
        raise PosbenchError(f"--extender {bad[0]}: unknown; valid: {', '.join(EXTENDERS)}")
    params = getattr(config, "rope_parameters", None) or {}
    if not params:
        raise PosbenchError(f"--extender {name}: a {family} checkpoint has no rotary positions (the extenders apply to "
                            f"RoPE checkpoints: {', '.join(EXTENDABLE)})")
    if family not in EXTENDABLE:
        raise PosbenchError(f"--extender {name}: not built for {family} checkpoints (their rotary layout and attention "
                            f"call are not checked here); built for: {', '.join(EXTENDABLE)}")
    if any(isinstance(v, dict) for v in params.values()):
        raise PosbenchError(f"--extender {name}: this checkpoint has RoPE parameters per layer type "
                            f"({', '.join(k for k, v in params.items() if isinstance(v, dict))}); only a checkpoint "
                            "with one set is extended here")
    if float(params.get("partial_rotary_factor", 1.0) or 0.0) <= 0.0:
        raise PosbenchError(f"--extender {name}: this checkpoint rotates no channel (partial_rotary_factor 0: NoPE); "
                            "the extenders apply to checkpoints with rotary channels")
    return [make_variant(n) for n in dict.fromkeys(names)]


def frequencies(rotary, config) -> tuple[torch.Tensor, float]:
    """(inverse frequencies [rotary_dim / 2] in float64, attention scaling) of the model's rotary module:
    its own, recomputed in float64 where they are plain RoPE's (transformers rounds them to float32)."""
    inv_freq = rotary.inv_freq.detach()
    theta = (getattr(config, "rope_parameters", None) or {}).get("rope_theta")
    if getattr(rotary, "rope_type", "default") == "default" and theta:
        exact = plain_frequencies(2 * inv_freq.numel(), float(theta)).to(inv_freq.device)
        if torch.allclose(exact.float(), inv_freq.float(), rtol=1e-6, atol=0.0):
            return exact, float(rotary.attention_scaling)
    return inv_freq.double(), float(rotary.attention_scaling)


class Unrotated(torch.nn.Module):
    """The model's rotary module for an extender row: runs it (its frequencies stay the model's, updated
    as a dynamic RoPE updates them), records them, and gives the layers cos = 1, sin = 0: no rotation."""

    def __init__(self, rotary, config):
        super().__init__()
        self.rotary, self.config = rotary, config

    def forward(self, x, position_ids, *args, **kwargs):
        cos, sin = self.rotary(x, position_ids, *args, **kwargs)
        inv_freq, scaling = frequencies(self.rotary, self.config)
        # cos/sin of 2 x frequencies channels (rotate-half, each angle twice) or of one per frequency (gpt-oss's
        # halves, x1 cos - x2 sin and x2 cos + x1 sin: the same rotation): the rotary channels are 2 x frequencies
        if cos.shape[-1] not in (inv_freq.numel(), 2 * inv_freq.numel()):
            raise PosbenchError(f"{type(self.rotary).__name__}: cos/sin of {cos.shape[-1]} channels from "
                                f"{inv_freq.numel()} frequencies: not the rotate-half layout the extenders assume")
        _state["tables"] = (inv_freq, scaling, 2 * inv_freq.numel())
        _state["rotary_calls"] += 1
        return torch.ones_like(cos), torch.zeros_like(sin)


def extender_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers' attention-function signature: q [B, H, L, D], k/v [B, Hkv, L, D], unrotated
    (``Unrotated``) -> ([B, L, H, D], None), the native variant's attention over positions 0..L-1."""
    variant, train_len = _state["variant"], _state["train_len"]
    if kwargs.get("softcap") is not None:
        raise PosbenchError(f"{type(module).__name__}: {variant.suffix()[1:]} does not compute logit soft-capping")
    if _state["tables"] is None:
        raise PosbenchError(f"{type(module).__name__}: its q and k were not left unrotated (the model's rotary_emb "
                            f"was not called): {variant.suffix()[1:]} cannot be applied to it")
    if query.shape[2] != key.shape[2]:
        raise PosbenchError(f"{variant.suffix()[1:]}: scored in one forward per window, not with a cache "
                            f"({query.shape[2]} queries, {key.shape[2]} keys)")
    _state["calls"] += 1
    inv_freq, attention_scaling, rotary_dim = _state["tables"]
    key, value = one_head_per_query(query, key, value)
    L = query.shape[2]
    positions = torch.arange(L, device=query.device)

    def rotate(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        cos, sin = rotation_tables(pos, inv_freq)
        rotated = apply_rotation(x[..., :rotary_dim], cos.to(x.device), sin.to(x.device))
        if attention_scaling != 1.0:  # transformers' cos and sin carry it (YaRN's mscale)
            rotated = rotated * attention_scaling
        return torch.cat((rotated, x[..., rotary_dim:]), dim=-1) if rotary_dim < x.shape[-1] else rotated

    scale = (query.shape[-1] ** -0.5 if scaling is None else scaling) * variant.logit_factor(L, train_len)
    if (qs := variant.query_scale(positions, train_len)) is not None:
        query = query * qs.to(query.dtype)[:, None]
    hidden = variant.hidden(positions, train_len)
    own = kwargs.get("sliding_window") or getattr(module, "sliding_window", None)
    if isinstance(own, int) and 0 < own < L:  # the layer's own window: keys further back are hidden too
        evicted = hidden
        hidden = (lambda i, j: j <= i - own) if evicted is None else (lambda i, j: evicted(i, j) | (j <= i - own))
    out = piecewise_rotary_attention(query, key, value, rotate, variant.pieces(positions, train_len), scale,
                                     hidden=hidden, sink=getattr(module, "sinks", None))  # gpt-oss's sink logits
    return out.transpose(1, 2).contiguous(), None



def extender_undefined_reason(variant: Variant | None, train_len: int) -> str | None:
    """Why the row has no score at this context length (StreamingLLM with no recent key left), else None."""
    no_cache = getattr(variant, "no_cache", None)
    return no_cache(train_len) if no_cache is not None else None


@contextmanager
def extended(model, variant: Variant | None, train_len: int):
    """The model computing ``variant`` (posbench's, at context length ``train_len``) for the block (None: unchanged)."""
    if variant is None:
        yield model
        return
    modules = rotary_modules(model)
    if not modules:
        raise PosbenchError(f"{type(model).__name__} has no rotary_emb module: {variant.suffix()[1:]} cannot be applied")
    with registered_attention(model, NAME, extender_attention, variant.suffix()[1:]):
        _state.update(variant=variant, train_len=int(train_len), tables=None, calls=0, rotary_calls=0)
        try:
            for parent, attr, old in modules:
                setattr(parent, attr, Unrotated(old, model.config))
            yield model
        finally:
            for parent, attr, old in modules:
                setattr(parent, attr, old)
            _state.update(variant=None, train_len=None, tables=None)


def check_extended() -> None:
    """After a forward under ``extended``: the rotary module and the registered attention both ran."""
    if _state["calls"] == 0 or _state["rotary_calls"] == 0:
        raise PosbenchError("this family's attention does not go through transformers' AttentionInterface and its "
                            "rotary_emb: the extenders cannot be applied to it")
