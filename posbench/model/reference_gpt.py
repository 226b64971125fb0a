"""The benchmark's yardstick: a plain nanoGPT-style GPT with causal SDPA and no positional-encoding
code at all (no hooks, no position tensor). Same layers and sizes as posbench.model.transformer (it reuses its
MLP), so a ratio of throughputs measures what the encoding machinery costs. Its init is plain
N(0, 0.02) for every matrix, without posbench.model.transformer's scaled residual projections: it is only ever
timed, never trained to a loss, and the speed of a step does not depend on the init."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from posbench.model.transformer import MLP, ModelConfig


class PlainAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.n_heads, D // self.n_heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, L, D))


class PlainBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attn, self.mlp = PlainAttention(cfg), MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class PlainGPT(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg.vocab, cfg.d_model)
        self.blocks = nn.ModuleList(PlainBlock(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        self.head.weight = self.tok_emb.weight
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx: torch.Tensor, positions: torch.Tensor | None = None, options=None) -> torch.Tensor:
        """LanguageModel's call signature, so that the same training loop times both; ``positions`` and
        ``options`` (evaluation rows' attention options) are ignored: this model has no positional code
        and one kernel, causal SDPA."""
        x = self.tok_emb(idx)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))
