"""MQAR beside Zoology's reference (HazyResearch/zoology), on CPU with one thread: which side fails?

Zoology's generator (the semantics of ``zoology/data/multiquery_ar.py``'s ``multiquery_ar``, written here) or posbench's
(``posbench/tasks/mqar.py``), into a minimal attention model in Zoology's shape (``basic.py`` with
``zoology/config.py``'s defaults: d_model 128, 2 layers, one head, learned positions, MLP 4x, embedding
dropout 0.1, attention dropout 0.1, AdamW lr 1e-3 weight decay 0.1) or posbench's model builder in the
same shape. Prints the accuracy on the query positions (Zoology's metric) of a held-out set.

    python scripts/zoology_check.py --data zoology --model mini
    python scripts/zoology_check.py --data posbench --model posbench --steps 3000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

IGNORE = -100


def zoology_mqar(vocab_size: int, num_examples: int, input_seq_len: int, seed: int, num_kv_pairs: int,
                 power_a: float = 0.01) -> tuple[torch.Tensor, torch.Tensor]:
    """Examples with the semantics of Zoology's ``multiquery_ar`` (one pass, random non-queries), written
    here: per example ``num_kv_pairs`` keys from 1 .. V/2 - 1 and as many values from V/2 .. V - 1 (each
    without replacement) as key-value pairs at the start; each key asked once after them, at an even
    offset 2g from their end, the gaps g drawn without replacement with weight g^(power_a - 1) (short gaps
    first); the label at a query's position is its key's value (IGNORE elsewhere); every other position a
    random token. Returns (inputs, labels), each [num_examples, input_seq_len]."""
    rng = np.random.default_rng(seed)
    half, pairs = vocab_size // 2, 2 * num_kv_pairs
    slots = (input_seq_len - pairs) // 2
    weight = np.arange(1, slots + 1, dtype=float) ** (power_a - 1)
    weight /= weight.sum()
    inputs = rng.integers(0, vocab_size, size=(num_examples, input_seq_len))
    labels = np.full((num_examples, input_seq_len), IGNORE, dtype=np.int64)
    for i in range(num_examples):
        keys = rng.choice(np.arange(1, half), num_kv_pairs, replace=False)
        values = rng.choice(np.arange(half, vocab_size), num_kv_pairs, replace=False)
        inputs[i, 0:pairs:2], inputs[i, 1:pairs:2] = keys, values
        asked = pairs + 2 * rng.choice(slots, num_kv_pairs, replace=False, p=weight)
        inputs[i, asked], labels[i, asked] = keys, values
    return torch.tensor(inputs), torch.tensor(labels)


def posbench_mqar(task, n: int, length: int, seed: int, first: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` examples of posbench's MQAR training batches (steps first, first + 1, ... of 32 each) as
    (inputs, labels): the targets where ``answer``, IGNORE elsewhere."""
    xs, ys = [], []
    for step in range(first, first + (n + 31) // 32):
        x, y, answer = task.training_batch(np.zeros(1024, dtype=np.uint8), 32, length, seed, step)
        xs.append(x)
        ys.append(torch.where(answer, y, torch.full_like(y, IGNORE)))
    return torch.cat(xs)[:n], torch.cat(ys)[:n]


class MiniBlock(nn.Module):
    def __init__(self, d: int, dropout: float):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.dropout = dropout

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)  # one head
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0)
        x = x + self.out(y)
        return x + self.mlp(self.ln2(x))


class Mini(nn.Module):
    """Zoology's TransformerBlock backbone, minimal: word + learned position embeddings, embedding
    dropout, pre-LN blocks of one-head attention and a 4x MLP, final LN, tied output."""

    def __init__(self, vocab: int, length: int, d: int = 128, layers: int = 2, dropout: float = 0.1):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(length, d)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(MiniBlock(d, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        x = self.drop(self.tok(idx) + self.pos(torch.arange(idx.shape[1])))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


@torch.no_grad()
def accuracy(model, x, labels) -> float:
    model.eval()
    right = total = 0
    for i in range(0, len(x), 256):
        logits, lab = model(x[i:i + 256]), labels[i:i + 256]
        m = lab != IGNORE
        right += int((logits.argmax(-1)[m] == lab[m]).sum())
        total += int(m.sum())
    model.train()
    return right / total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", choices=["zoology", "posbench"], default="zoology")
    ap.add_argument("--model", choices=["mini", "posbench"], default="mini")
    ap.add_argument("--encoding", default="learned")  # --model posbench: the encoding
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--examples", type=int, default=10_000)  # fixed training set (0: fresh examples every step)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--alphabet", type=int, default=64)  # posbench data
    ap.add_argument("--train-queries", default="zoology")  # posbench data
    ap.add_argument("--shape", default="128,2,1")  # --model posbench: d_model,n_layers,n_heads (tiny: 64,2,2)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--init", choices=["torch", "gpt2"], default=None)  # PyTorch's defaults or GPT-2's (Zoology's); default: mini torch, posbench its own
    ap.add_argument("--emb-std", type=float, default=0.0)  # --model posbench: re-draw the token (and learned position) embeddings at this std
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    L, B = 64, 32
    task = None
    if a.data == "zoology":
        x_tr, y_tr = zoology_mqar(256, a.examples or 10_000, L, a.seed + 1, a.pairs)
        x_te, y_te = zoology_mqar(256, 1000, L, a.seed + 2, a.pairs)
    else:
        from posbench.tasks.mqar import MQAR
        task = MQAR(MQAR.Params(pairs=a.pairs, eval_pairs=[a.pairs], alphabet=a.alphabet, train_queries=a.train_queries))
        x_tr, y_tr = posbench_mqar(task, a.examples, L, a.seed, 0) if a.examples else (None, None)
        x_te, y_te = posbench_mqar(task, 1024, L, a.seed + 99, 0)  # training-style (fresh seed) held-out examples
    if a.model == "mini":
        model = Mini(256, L, dropout=a.dropout)
        if a.init in (None, "torch"):
            pass
        elif a.init == "gpt2":  # Zoology's _init_weights: N(0, 0.02) everywhere, zero biases, out projections / sqrt(2 n_layers)
            for name, p in model.named_parameters():
                if p.dim() == 2:
                    nn.init.normal_(p, std=0.02 / (2 * 2) ** 0.5 if name.endswith(("out.weight", "mlp.2.weight")) else 0.02)
                elif name.endswith("bias") and "ln" not in name:
                    nn.init.zeros_(p)
    else:
        from posbench.model.transformer import ModelConfig, build_model
        d, n_layers, n_heads = (int(v) for v in a.shape.split(","))
        model = build_model(ModelConfig(name="z", d_model=d, n_layers=n_layers, n_heads=n_heads, mlp_ratio=4, dropout=a.dropout),
                            a.encoding, {}, L)
        if a.init == "torch":  # PyTorch's defaults (as the minimal model): linears kaiming-uniform, embeddings N(0, 1)
            for m in model.modules():
                if isinstance(m, nn.Linear):
                    m.reset_parameters()
            nn.init.normal_(model.tok_emb.weight, std=1.0)  # tied to the head: drawn last
            if hasattr(model.encoding, "table"):
                nn.init.normal_(model.encoding.table.weight, std=1.0)
        if a.emb_std:
            nn.init.normal_(model.tok_emb.weight, std=a.emb_std)
            if hasattr(model.encoding, "table"):
                nn.init.normal_(model.encoding.table.weight, std=a.emb_std)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.wd)
    g = torch.Generator().manual_seed(a.seed)
    t0 = time.time()
    print(f"data={a.data} model={a.model} enc={a.encoding} examples={a.examples} steps={a.steps} "
          f"init={a.init} emb_std={a.emb_std} dropout={a.dropout} lr={a.lr} wd={a.wd} params={sum(p.numel() for p in model.parameters())}", flush=True)
    for step in range(a.steps):
        if x_tr is not None:
            idx = torch.randint(len(x_tr), (B,), generator=g)
            x, y = x_tr[idx], y_tr[idx]
        else:
            x, y = posbench_mqar(task, B, L, a.seed, 10_000 + step)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=IGNORE)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (step + 1) % a.eval_every == 0 or step + 1 == a.steps:
            print(f"step {step + 1} loss {loss.item():.3f} test acc {accuracy(model, x_te, y_te):.3f} "
                  f"({time.time() - t0:.0f}s)", flush=True)


if __name__ == "__main__":
    main()
