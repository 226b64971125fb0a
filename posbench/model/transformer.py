"""A toy decoder-only language model (pre-LN GPT, after karpathy/nanoGPT).

The positional encoding is a plug-in: the model calls its hooks (input, rotation, bias, relative;
and per layer: window, temperature, sink, output gate, content-dependent bias) and never branches
on which encoding it is. Positions are an explicit tensor passed to forward.

Each layer's sequence mixer is a plug-in too (``model.mixers``, a per-layer pattern: posbench/mixers/):
``attention`` is the causal self-attention below, with the run's encoding; any other entry is a
recurrent mixer (``gdn``, ``mamba2``), which takes no positional encoding. A hybrid is a pattern:
``[gdn, gdn, gdn, attention]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Dict, List, Optional

import torch
import torch.nn.functional as F
from torch import nn

from posbench.attention.kernels import (
    biased_causal_attention,
    causal_attention,
    distance_bias_attention,
    masked_attention,
    use_flex,
    flex_scores_attention,
)
from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.encodings import ModelShape, PositionalEncoding, build_encoding
from posbench.model.canon import PLACES as CANON_PLACES
from posbench.model.canon import canon_at
from posbench.model.kernel_choice import PORTABLE, Kernel, choose_kernel, layer_window
from posbench.mixers import ATTENTION, Mixer, MixerShape, build_mixer, mixer_class
from posbench.mixers.state import mix


INITS = ("gpt2", "torch")  # ModelConfig.init


@dataclass(frozen=True)
class ModelConfig:
    """The model's shape (``model=`` in conf/model/: tiny, small, medium, base)."""

    name: str = "small"
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    mlp_ratio: int = 4
    dropout: float = 0.0
    vocab_size: Optional[int] = None  # None: the tokenizer's (data.tokenizer; 256 for bytes), filled in by RunSpec
    # each layer's sequence mixer, repeated over the layers (a model with fewer layers takes the last
    # entries): attention (the run's encoding) or a mixer of posbench/mixers/ (no positional encoding)
    mixers: List[str] = field(default_factory=lambda: [ATTENTION])
    mixer_params: Dict[str, Any] = field(default_factory=dict)  # each mixer's Params: {gdn: {expand_v: 2}}; null: defaults
    # Canon layers (posbench/model/canon.py): the places inside each block, any of "ABCD"; "": none
    canon: str = ""
    # the initial weights of the embedding and the blocks (the encoding keeps its own): "gpt2" draws every
    # matrix from N(0, 0.02) (residual projections / sqrt(2 n_layers)), GPT-2's and Zoology's; "torch" keeps
    # PyTorch's own (nn.Embedding N(0, 1), tied to the head; nn.Linear kaiming-uniform, std 1/sqrt(3 fan_in)).
    # Measured (results/mqar_levers): the tiny RoPE model learns MQAR's binding from "torch" (query accuracy
    # 0.995 after 1,500 steps) and not from "gpt2" (0.395, chance, after 3,000), all else equal
    init: str = "gpt2"

    @property
    def vocab(self) -> int:
        """Rows of the embedding and the output layer: ``vocab_size``, or 256 (bytes) when unset."""
        return self.vocab_size if self.vocab_size is not None else 256

    def check(self) -> None:
        for key in ("d_model", "n_layers", "n_heads", "mlp_ratio"):
            if getattr(self, key) < 1:
                raise PosbenchError(f"model.{key} must be a positive integer, got {getattr(self, key)}")
        # that it fits the tokenizer is RunSpec.check's: it involves the data settings too
        if self.vocab_size is not None and self.vocab_size < 1:
            raise PosbenchError(f"model.vocab_size must be a positive integer (or null: the tokenizer's), got {self.vocab_size}")
        if not 0 <= self.dropout < 1:
            raise PosbenchError(f"model.dropout must be in [0, 1), got {self.dropout}")
        if self.init not in INITS:
            raise PosbenchError(f"model.init must be one of {', '.join(INITS)}, got {self.init!r}")
        if self.d_model % self.n_heads:
            raise PosbenchError(f"model.d_model={self.d_model} is not divisible by model.n_heads={self.n_heads}")
        if not self.mixers:
            raise PosbenchError("model.mixers is empty; give one entry per layer (repeated), e.g. [attention] or "
                                "[gdn, gdn, gdn, attention]")
        for name in self.mixers:
            if name != ATTENTION:
                mixer_class(str(name))  # an unknown name is one line naming the valid ones
        canon = str(self.canon or "")
        if set(canon) - set(CANON_PLACES) or len(set(canon)) != len(canon):
            raise PosbenchError(f"model.canon={self.canon!r}: give places of Canon layers, each once, from "
                                f"{CANON_PLACES} (A: mixer input, B: q/k/v, C: MLP input, D: inside the MLP), or '' for none")
        if extra := sorted(set(self.mixer_params or {}) - set(self.mixers) - {ATTENTION}):
            raise PosbenchError(f"model.mixer_params names {extra[0]!r}, which is not in model.mixers={list(self.mixers)}")

    def layer_mixers(self) -> list[str]:
        """The mixer of each layer: the pattern repeated; a model with fewer layers than the pattern
        takes its last entries (a 2-layer ``[gdn, gdn, gdn, attention]`` is ``[gdn, attention]``)."""
        pattern = [str(m) for m in self.mixers][-self.n_layers:]
        return [pattern[i % len(pattern)] for i in range(self.n_layers)]

    @property
    def attention_layers(self) -> list[int]:
        return [i for i, m in enumerate(self.layer_mixers()) if m == ATTENTION]


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.n_heads, self.layer = cfg.n_heads, layer
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)
        self.dropout = nn.Dropout(cfg.dropout)
        self.canon_b = canon_at(cfg.canon, "B", 3 * cfg.d_model)  # on q, k, v before any position (model.canon)

    def forward(self, x, enc: PositionalEncoding, positions, pos_state, options: AttentionOptions, flex: bool = False):
        """x [B, L, D] -> [B, L, D], through the kernel ``choose_kernel`` picks for this layer
        (posbench/model/kernel_choice.py: the kernels and their precedence)."""
        return self.attend(x, enc, positions, pos_state, options, flex)[0]

    def attend(self, x, enc: PositionalEncoding, positions, pos_state, options: AttentionOptions, flex: bool = False):
        """(``forward``'s output, the attention average of the encoding's carried state [B, H, L, E], or
        None where it carries none): the carried features ride along as extra value channels, so one
        kernel call gives both with the same weights (TAPE)."""
        B, L, D = x.shape
        qkv = self.qkv(x) if self.canon_b is None else self.canon_b(self.qkv(x))  # [B, L, 3D]
        q, k, v = qkv.view(B, L, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)  # each [B, H, L, Dh]
        kernel = choose_kernel(enc, self.layer, options, flex, q.device)
        carried = enc.carried(pos_state)  # [B or 1, H, L, E] or None
        if carried is not None:
            v = torch.cat((v, carried.to(v.dtype).expand(B, -1, -1, -1)), dim=-1)
        if kernel is Kernel.OWN:  # content-position terms (Shaw, Transformer-XL) or no softmax (stick-breaking)
            y = enc.relative_attention(q, k, v, positions, self.layer, options)
        elif kernel is Kernel.EXTENDER:  # ReRoPE, SelfExtend, DCA, StreamingLLM (evaluation/variants/): q, k not yet rotated
            y = options.attention(q, k, v, enc, positions, options, layer=self.layer)
        else:
            y = self.softmax_attention(kernel, x, q, k, v, enc, positions, pos_state, options)
        mixed = None
        if carried is not None:
            y, mixed = y.split((D // self.n_heads, carried.shape[-1]), dim=-1)
        y = enc.gate(x, y, self.layer)  # [B, H, L, Dh]: an output gate from the layer's input (gated attention), else y
        return self.dropout(self.proj(y.transpose(1, 2).reshape(B, L, D))), mixed  # [B, L, D]

    def softmax_attention(self, kernel: Kernel, x, q, k, v, enc, positions, pos_state, options: AttentionOptions):
        """softmax(q.k * scale + bias [+ content term]) v with the encoding's hooks, by ``kernel``:
        q, k, v [B, H, L, Dh] before rotation -> [B, H, L, Dh]."""
        layer, t, block = self.layer, options.logit_scale, options.block
        if enc.uses_rotation:
            q, k = enc.rotate(q, k, pos_state)
        own, window = enc.window(layer), layer_window(enc, layer, options)
        # a row's temperature (logn, floor-log) scales the layers without a window or temperature of their own
        q = temper(q, enc, positions, window, layer, options.query_scale if own is None else None)
        scale = enc.softmax_scale(pos_state)  # None: 1/sqrt(Dh)
        if t != 1.0:  # an attention temperature scales every logit: q.k through the scale, the bias below
            scale = (scale if scale is not None else q.shape[-1] ** -0.5) * t
        bias_fn = (lambda i, j: enc.bias(i, j, layer) * t) if enc.uses_bias else None  # noqa: E731  [H, c, e]
        if options.recorder is not None and kernel not in (Kernel.SCORES, Kernel.FLEX_SCORES):
            # attention diagnostics (posbench/evaluation/diagnostics.py), evaluation only; SCORES reports its own weights
            options.recorder.add(layer, q, k, scale, bias_fn, positions, block)
        sink = enc.sink(layer)  # [H] or None
        content = enc.content_bias(x, q, k, layer) if kernel in (Kernel.SCORES, Kernel.FLEX_SCORES, Kernel.BAND) else None
        if kernel is Kernel.BAND:  # CoPE in evaluation on CPU: a band of keys explicit, the rest one SDPA call
            return content.band_attention(k, v, scale)
        if kernel in PORTABLE:  # flex: a bias by distance is one [H, L] table over distances 0..L-1
            table = enc.bias(positions, positions[:1], layer)[:, :, 0] * t if bias_fn else None
            y = (flex_scores_attention(q, k, v, scale, window, table, sink, content) if kernel is Kernel.FLEX_SCORES
                 else distance_bias_attention(q, k, v, table, scale))
            if y is not None:
                return y
            kernel = PORTABLE[kernel]  # flex could not compile here: the same step on explicit scores
        if kernel is Kernel.SCORES:  # the 2024-2026 hooks: scores per block of queries, only the keys the window reaches
            bias = (lambda s, e, lo: bias_fn(positions[s:e], positions[lo:e])) if bias_fn else None  # noqa: E731
            weights = partial(options.recorder.add_weights, layer) if options.recorder is not None else None
            return masked_attention(q, k, v, scale, bias, window, sink, content, block, weights)
        if kernel is Kernel.SDPA:
            if v.shape[-1] > q.shape[-1]:  # carried features (TAPE) widen v: SDPA's flash kernel needs one width
                scale = scale if scale is not None else q.shape[-1] ** -0.5  # (else the L x L math kernel, 8x slower
                q, k = (F.pad(t, (0, v.shape[-1] - t.shape[-1])) for t in (q, k))  # on CPU): zeros keep q.k
            return causal_attention(q, k, v, scale)
        return biased_causal_attention(q, k, v, bias_fn, positions, scale, block=block)  # BLOCKWISE, BIASED


def temper(q, enc: PositionalEncoding, positions, window, layer: int, row_scale=None):
    """q times the layer's own temperature (SSMax, iRoPE's floor-log), or where it has none, the
    row's (logn, floor-log: ``row_scale``); each a function of the positions and of how many keys
    each query sees."""
    keys = window.keys_seen(len(positions), q.device) if window is not None else torch.arange(1, len(positions) + 1, device=q.device)
    scale = enc.query_scale(positions, keys, layer)
    if scale is None and row_scale is not None:  # a per-layer one (+headscale's HeadScales) is told the layer
        scale = row_scale(positions, keys, layer) if getattr(row_scale, "per_layer", False) else row_scale(positions, keys)
    return q if scale is None else (q * scale.to(q.dtype)[..., None]).to(q.dtype)


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc = nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model, bias=False)
        self.proj = nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model, bias=False)
        self.dropout = nn.Dropout(cfg.dropout)
        self.canon_d = canon_at(cfg.canon, "D", cfg.mlp_ratio * cfg.d_model)  # before the activation (model.canon)

    def forward(self, x):
        h = self.fc(x) if self.canon_d is None else self.canon_d(self.fc(x))
        return self.dropout(self.proj(F.gelu(h)))


class Block(nn.Module):
    """A pre-LN block: x + mixer(ln1(x)), then x + mlp(ln2(x)). The mixer is attention (``attn``,
    with the encoding) or a recurrent mixer (``mixer``, which takes no positions). With Canon layers
    (``model.canon``): x + mixer(canon_A(ln1(x))), then x + mlp(canon_C(ln2(x)))."""

    def __init__(self, cfg: ModelConfig, layer: int, mixer: Optional[Mixer] = None):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        if mixer is None:
            self.attn = CausalSelfAttention(cfg, layer)
        else:
            self.mixer, self.mixer_drop = mixer, nn.Dropout(cfg.dropout)
        self.mlp = MLP(cfg)
        # built last, so that a model without them draws the same random numbers as before they existed
        self.canon_a, self.canon_c = canon_at(cfg.canon, "A", cfg.d_model), canon_at(cfg.canon, "C", cfg.d_model)

    @property
    def is_attention(self) -> bool:
        return "attn" in self._modules

    def forward(self, x, enc, positions, pos_state, options, flex=False):
        """-> (x after the block, the positional state the next layer reads): ``pos_state`` itself,
        except for an encoding that carries its state from layer to layer (``carries_state``: TAPE),
        which updates it after the attention and after the MLP."""
        h = self.ln1(x) if self.canon_a is None else self.canon_a(self.ln1(x))
        carries = self.is_attention and enc.carries_state
        if carries:
            y, mixed = self.attn.attend(h, enc, positions, pos_state, options, flex)
            x, pos_state = x + y, enc.after_attention(pos_state, mixed, self.attn.layer)
        elif self.is_attention:
            x = x + self.attn(h, enc, positions, pos_state, options, flex)
        else:
            # state passing in training; under a window, at least W tokens a token (sliding) or a reset every W (chunked): posbench/mixers/state.py
            x = x + self.mixer_drop(mix(self.mixer, h, options.window))
        h = self.ln2(x) if self.canon_c is None else self.canon_c(self.ln2(x))
        m = self.mlp(h)
        if carries:
            pos_state = enc.after_mlp(pos_state, m, self.attn.layer)
        return x + m, pos_state


def build_blocks(cfg: ModelConfig) -> nn.ModuleList:
    """One block per layer, with the layer's mixer (``cfg.layer_mixers()``); a plain model's blocks
    are built exactly as before mixers existed (the same modules, the same random numbers)."""
    shape = MixerShape(cfg.d_model, cfg.n_heads, cfg.n_layers)
    params = cfg.mixer_params or {}
    return nn.ModuleList(
        Block(cfg, i, None if name == ATTENTION else
              build_mixer(name, shape, params.get(name), prefix=f"model.mixer_params.{name}"))
        for i, name in enumerate(cfg.layer_mixers()))


class LanguageModel(nn.Module):
    def __init__(self, cfg: ModelConfig, encoding: PositionalEncoding):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab, cfg.d_model)
        self.encoding = encoding
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = build_blocks(cfg)
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        self.head.weight = self.tok_emb.weight  # weight tying, as in GPT-2
        if cfg.init == "torch":  # the layers' PyTorch defaults, as constructed above (ModelConfig.init)
            return
        # GPT-2 init for the transformer; the encoding keeps its own (it knows what its parameters mean)
        nn.init.normal_(self.tok_emb.weight, std=0.02)
        for name, p in self.blocks.named_parameters():
            if name.endswith(".weight") and p.dim() == 2:
                # scaled residual projections keep the residual stream's variance flat in depth (a
                # mixer's is its out_proj; its other projections are inputs)
                residual = name.endswith(".out_proj.weight") if ".mixer." in name else name.endswith("proj.weight")
                std = 0.02 / (2 * cfg.n_layers) ** 0.5 if residual else 0.02
                nn.init.normal_(p, std=std)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx: torch.Tensor, positions: torch.Tensor | None = None,
                options: AttentionOptions | None = None) -> torch.Tensor:
        """idx: [B, L] token ids; positions: [L] (default 0..L-1); options: how attention runs in
        this forward (default: as trained; evaluation rows pass their own) -> logits [B, L, vocab]."""
        L = idx.shape[1]
        contiguous = positions is None  # 0..L-1; given positions are compared (a device sync) only where flex would run
        if positions is None:
            positions = torch.arange(L, device=idx.device)
        options = options or AttentionOptions()
        x = self.encoding.embed(self.tok_emb(idx), positions)
        x = self.drop(x)
        # flex attention (a bias by distance, a window) where it pays, over contiguous positions
        flex = (options.block is None and use_flex(idx.device, L, self.training, options.kernel)
                and (contiguous or torch.equal(positions, torch.arange(L, device=positions.device))))
        states = {}  # per-forward state of each layer's encoding (one for a plain model), computed once
        for i, layer in enumerate(self.blocks):
            if not layer.is_attention:  # a recurrent mixer: no positions, no encoding
                x, _ = layer(x, None, positions, None, options, flex)
                continue
            enc = self.encoding.at(i)
            if id(enc) not in states:
                states[id(enc)] = enc.prepare(positions, options)
            # the state layer i hands on is the one the next layer of the same encoding reads (TAPE's)
            x, states[id(enc)] = layer(x, enc, positions, states[id(enc)], options, flex)
        return self.head(self.ln_f(x))


def build_model(
    model_cfg: ModelConfig, encoding_name: str, encoding_params: dict, train_len: int, max_position: int = 0
) -> LanguageModel:
    shape = ModelShape(model_cfg.d_model, model_cfg.n_heads, model_cfg.n_layers, train_len, max(train_len, max_position))
    return LanguageModel(model_cfg, build_encoding(encoding_name, shape, encoding_params))
