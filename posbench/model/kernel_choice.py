"""Which attention kernel one layer runs in one forward: ``choose_kernel``, from the layer's encoding
(its hooks: posbench/encodings/base.py), the layer and the forward's options
(posbench/attention/options.py). The model's ``CausalSelfAttention.forward`` runs what it says and
never decides itself.

Precedence, first match wins (the kernels are in posbench/attention/kernels.py):

1. ``OWN``        the encoding computes its whole attention (``relative_attention``: Shaw,
                  Transformer-XL, stick-breaking); it honours ``block``, ``window`` and
                  ``logit_scale`` itself.
2. ``EXTENDER``   the options carry a training-free extender's attention (ReRoPE, SelfExtend, DCA,
                  StreamingLLM: ``options.attention``), for a rotary encoding; the options refuse it
                  beside a block, a window, a row temperature or a recorder (AttentionOptions), and
                  this function beside an encoding it cannot serve (no rotation, a bias, a window
                  or content term of the layer's own, TAPE's carried state; a sink logit and SSMax's
                  temperature it takes along): nothing is silently dropped.
3. ``FLEX_SCORES`` a window (the layer's own, else the options'), a sink or a decay term (FoX's
                  c_i - c_j: ``Decay``), no other content term, no block or recorder, a bias only by
                  distance, where flex runs and pays (``flex_pays``): one compiled flex kernel, the
                  window a block mask, no score matrix held.
4. ``BAND``       a content term with a band form (``content_has_band``: CoPE) and nothing else (no
                  window, sink, block, bias or recorder), in evaluation on CPU where torch has the
                  flash kernel that returns its log-sum-exp (``CPU_FLASH_LSE``): the term's own
                  ``band_attention``, a band of keys explicit and the rest one SDPA call.
5. ``SCORES``     a window, a sink or a content-dependent term (FoX, CoPE, PaTH): explicit scores per
                  block of queries (``masked_attention``), with ``block`` applied too.
6. ``BLOCKWISE``  blockwise causal attention (``options.block``): the chunked float-mask path.
7. ``FLEX_DISTANCE`` a bias by distance only (ALiBi, KERPLE, T5, Sandwich), where flex runs: one [H, L] table.
8. ``BIASED``     any other bias: the chunked float-mask path.
9. ``SDPA``       no bias: ``scaled_dot_product_attention(is_causal=True)``.

A layer's own window takes precedence over the options' window (an evaluation window applies to the
layers without one), and a row temperature (``options.query_scale``) scales only the layers with
neither a window nor a temperature of their own (``model.transformer.temper``). ``flex`` is the
model's per-forward answer to whether flex attention may run at all (``use_flex``, contiguous
positions, no block). When a flex kernel cannot compile here it returns None and the forward
runs the portable kernel of the same step (``PORTABLE``).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Optional

import torch

from posbench.attention.kernels import CPU_FLASH_LSE, Window
from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.encodings.base import PositionalEncoding


class Kernel(Enum):
    OWN = "own"
    EXTENDER = "extender"
    FLEX_SCORES = "flex_scores"
    BAND = "band"
    SCORES = "scores"
    BLOCKWISE = "blockwise"
    FLEX_DISTANCE = "flex_distance"
    BIASED = "biased"
    SDPA = "sdpa"


# where a flex kernel cannot compile here: the kernel of the same step on explicit scores
PORTABLE = {Kernel.FLEX_SCORES: Kernel.SCORES, Kernel.FLEX_DISTANCE: Kernel.BIASED}


def layer_window(enc: Any, layer: int, options: AttentionOptions) -> Optional[Window]:
    """The window this layer attends within: its own (``enc.window``), else the options' (an
    evaluation window, ``+swaL``), else None (full causal attention)."""
    return enc.window(layer) or options.window


def has_content_term(enc: Any) -> bool:
    """Whether the encoding overrides ``content_bias`` (a layer pattern's view answers for its part):
    an override is a data-dependent term on every layer the object serves."""
    return getattr(enc.content_bias, "__func__", None) is not PositionalEncoding.content_bias


def choose_kernel(enc: Any, layer: int, options: AttentionOptions, flex: bool, device: torch.device) -> Kernel:
    """The kernel of layer ``layer`` for encoding ``enc`` (``encoding.at(layer)``) under ``options``
    (the module docstring gives the precedence); ``flex``: whether flex attention may run in this
    forward. PosbenchError for an extender on an encoding it cannot serve."""
    if enc.uses_relative:
        if options.attention is not None:
            raise PosbenchError(f"a training-free extender (options.attention) rotates q and k itself, but "
                                f"{enc.name} computes its own attention (relative_attention); extenders are for RoPE models")
        return Kernel.OWN
    window, sink, content = layer_window(enc, layer, options), enc.sink(layer), has_content_term(enc)
    if options.attention is not None:
        extender_check(enc, layer, window, content)
        return Kernel.EXTENDER
    if window is not None or sink is not None or content:
        if flex and flex_pays(enc, options, device, sink is not None, content):
            return Kernel.FLEX_SCORES
        return Kernel.BAND if band_runs(enc, options, device, window, sink) else Kernel.SCORES
    if options.block is not None:
        return Kernel.BLOCKWISE
    if enc.uses_bias:
        return Kernel.FLEX_DISTANCE if flex and enc.translation_invariant else Kernel.BIASED
    return Kernel.SDPA


def flex_pays(enc: Any, options: AttentionOptions, device: torch.device, sink: bool, content: bool) -> bool:
    """Whether a layer with a window, a sink or a content term runs ``flex_scores_attention`` (flex
    runs at all: the caller's ``flex``). Not with a block or a recorder (no flex form; the recorder
    reads the explicit kernel's weights), a bias that is not by distance, a content term other than a
    ``Decay``. A window alone: on CUDA, or on CPU where asked (``kernel=flex``), since its explicit
    blocks cost L x (block + window) there. A sink or a decay: on CPU, where flex runs for evaluation
    only and a long window's explicit scores cost 3-5x NoPE's time (results/bench/bench.md); on
    CUDA they keep the explicit kernel, whose backward through the learned sink and gates is the
    one trained with."""
    if options.block is not None or options.recorder is not None or (enc.uses_bias and not enc.translation_invariant):
        return False
    if content and not enc.content_is_decay:
        return False
    if sink or content:
        return device.type == "cpu"
    return device.type == "cuda" or options.kernel == "flex"


def band_runs(enc: Any, options: AttentionOptions, device: torch.device, window: Optional[Window], sink: Any) -> bool:
    """Whether a layer with a content term runs the term's ``band_attention``: the encoding has one
    (``content_has_band``), nothing else shapes the scores (no window, sink, block, bias, recorder:
    the band form has none of them), evaluation (no gradient: the band form has no backward) on CPU,
    where the flash kernel returns the log-sum-exp the band merges with."""
    return (enc.content_has_band and CPU_FLASH_LSE and device.type == "cpu" and not torch.is_grad_enabled()
            and window is None and sink is None and options.block is None and options.recorder is None
            and not enc.uses_bias)


def extender_check(enc: Any, layer: int, window: Optional[Window], content: bool) -> None:
    """An extender's kernel (piecewise_rotary_attention) is rotation and a softmax with a sink logit and a
    query temperature at most: refuse a layer whose encoding has more, rather than drop it."""
    what = ("no rotation" if not enc.uses_rotation else "a score bias" if enc.uses_bias
            else f"a window ({window.tag})" if window is not None
            else "a content-dependent term" if content
            else "a positional state carried from layer to layer (TAPE)" if enc.carries_state else None)
    if what is not None:
        raise PosbenchError(f"a training-free extender (options.attention) cannot serve layer {layer} of {enc.name}, "
                            f"which has {what}; extenders run rotation and a softmax (RoPE, partial RoPE, with a sink "
                            "logit or SSMax's temperature)")
