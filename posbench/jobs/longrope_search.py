"""LongRoPE's evolutionary search for per-dimension RoPE factors, run on a finished run's checkpoint
(the method and its budget: posbench/attention/longrope.py, which reads the committed table)::

    python -m posbench.jobs.longrope_search runs/<run_id> --factor 4 --factor 16 --write"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from posbench.attention import longrope
from posbench.attention.longrope import BUDGET, read_table, table_key, yarn_init
from posbench.attention.longrope import DimMonoSearch as _Search  # the search itself lives beside its table
from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import (
    ROPE_SCALINGS,
    longrope_attention_factor,
    plain_frequencies,
)
from posbench.core.errors import PosbenchError
from posbench.data.load import load_corpus
from posbench.jobs.evaluate import model_from_checkpoint
from posbench.store.rundir import RunDir


@torch.no_grad()
def search_factors(model, tokens: np.ndarray, train_len: int, factor: float, budget: dict | None = None,
                   seed: int = 0, device: torch.device | str = "cpu") -> dict:
    """Search LongRoPE's long factors for ``model`` (a trained RoPE LanguageModel) at ``factor`` on
    windows of ``factor x train_len`` tokens of ``tokens`` (the train split). Returns the table entry:
    long_factor, short_factor and what the search was (budget, losses of each start and of the best)."""
    b = {**BUDGET, **(budget or {})}
    enc = model.encoding
    if not getattr(enc, "rope_scalable", False):
        raise PosbenchError(f"the LongRoPE search needs a RoPE model, got encoding {enc.name}")
    head_dim, base = enc.shape.head_dim, enc.params.base
    target = int(round(factor * train_len))
    if len(tokens) < target + 2:
        raise PosbenchError(f"the LongRoPE search needs more than {target + 1} tokens of text, got {len(tokens)}")
    rng = np.random.default_rng([seed, target, 7])
    starts = rng.integers(0, len(tokens) - target - 1, size=b["windows"] + b["heldout_windows"])
    batch = torch.from_numpy(np.stack([tokens[s: s + target + 1] for s in starts]).astype(np.int64)).to(device)
    searched, heldout = batch[: b["windows"]], batch[b["windows"]:]
    plain = plain_frequencies(head_dim, base)
    attention = longrope_attention_factor(factor, train_len) ** 2
    model.eval()

    def loss_on(windows: torch.Tensor, f: np.ndarray) -> float:
        inv_freq = plain / torch.tensor(f, dtype=torch.float64)
        enc.frequencies = lambda options, length: (inv_freq, attention)  # this candidate, for this forward
        try:
            logits = model(windows[:, :-1], None, AttentionOptions())
        finally:
            del enc.frequencies
        return float(F.cross_entropy(logits.float().flatten(0, 1), windows[:, 1:].flatten()))

    yarn_inv, _ = ROPE_SCALINGS.get("yarn").compute(head_dim, base, factor, train_len, target)
    inits = {"YaRN's ramp mixed in factor space (microsoft/LongRoPE evolution/search.py)":
             yarn_init(head_dim, base, train_len, factor),
             "YaRN's own frequencies (HF _compute_yarn_parameters) as factors":
             np.clip(np.round((plain / yarn_inv).numpy(), 2), 1.0, factor)}
    search = _Search(lambda f: loss_on(searched, f), factor, b, seed)
    best, best_loss, curve = search.run(list(inits.values()))
    return {"long_factor": [float(v) for v in best], "short_factor": [1.0] * (head_dim // 2),
            "search": {"algorithm": "dim_mono (microsoft/LongRoPE), toy budget", **b, "evaluations": len(search.seen),
                       "text": "train split", "window_tokens": target, "seed": seed,
                       "init_loss": {name: round(search.evaluate(f), 5) for name, f in inits.items()},
                       "best_loss": round(best_loss, 5), "best_loss_by_iteration": [round(v, 5) for v in curve],
                       "heldout_init_loss": {name: round(loss_on(heldout, f), 5) for name, f in inits.items()},
                       "heldout_best_loss": round(loss_on(heldout, best), 5)}}


def write_entry(key: str, entry: dict, path: Path | None = None, replace: bool = False) -> None:
    path = path or longrope.TABLE  # read at call time: tests point it at a temporary table
    table = read_table(path)
    if key in table and not replace:
        raise PosbenchError(f"{path.name} already holds {key}; committed factors are not changed (--replace to do so)")
    table[key] = entry
    path.write_text(json.dumps(dict(sorted(table.items())), indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m posbench.jobs.longrope_search",
                                description="Search LongRoPE's per-dimension factors for a trained RoPE run.")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--factor", type=float, action="append", required=True, help="s = target / train_len (repeatable)")
    p.add_argument("--write", action="store_true", help=f"add the factors to {longrope.TABLE.name}")
    p.add_argument("--replace", action="store_true", help="replace an entry of the same size")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        model, spec = model_from_checkpoint(RunDir(args.run_dir).load_checkpoint(), torch.device("cpu"))
        if spec.is_extension:
            raise PosbenchError("search LongRoPE factors on a run trained from scratch, not an extension run")
        corpus = load_corpus(spec.data)
        for s in args.factor:
            entry = search_factors(model, corpus.train, spec.train_len, s, seed=args.seed)
            entry["search"]["run"] = spec.run_id
            key = table_key(spec.shape.head_dim, spec.encoding.params.base, spec.train_len, s)
            print(key, json.dumps(entry))
            if args.write:
                write_entry(key, entry, replace=args.replace)
    except PosbenchError as e:
        raise SystemExit(f"error: {e}") from None


if __name__ == "__main__":
    main()
