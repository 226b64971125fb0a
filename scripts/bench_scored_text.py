"""What the representative scored text costs: one model's evaluation with the default settings
against the earlier default (the contiguous validation targets [16 x train_len, + 32768), each
stream protocol run on its own), interleaved in one process, best of --rounds each.

    python scripts/bench_scored_text.py                    # small model, train_len 64, rope and alibi
    python scripts/bench_scored_text.py --encodings nope --rounds 2 --out results/bench

The earlier default is reproduced with today's code: one segment of 32768 targets in a split read
as a single document (no separators), scored by ``nonoverlapping`` and ``sliding`` in two separate
evaluations, so no window is shared between them, as the earlier code ran them. Writes
scored_text.md into --out (the ratio, the tokens and documents scored by each).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import torch

from posbench.core.device import describe, resolve_device
from posbench.data.corpus import DataConfig
from posbench.data.load import load_corpus
from posbench.evaluation.perplexity import evaluate_model, token_sets_of
from posbench.evaluation.resolved import ResolvedEval
from posbench.evaluation.settings import EvalConfig
from posbench.model.transformer import ModelConfig, build_model

EARLIER_TOKENS = 32768  # the earlier default eval.scored_tokens (a contiguous range)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--encodings", default="rope,alibi")
    ap.add_argument("--train-len", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    device = resolve_device(args.device)
    val = load_corpus(DataConfig()).val
    L = args.train_len
    default = EvalConfig(rope_scaling=[], bca=[])
    earlier = [replace(default, protocols=[p], scored_tokens=EARLIER_TOKENS, segment=EARLIER_TOKENS)
               for p in default.protocols]
    mc = ModelConfig(name="small", d_model=128, n_layers=4, n_heads=4, mlp_ratio=4)
    lines = []
    for name in args.encodings.split(","):
        torch.manual_seed(0)
        model = build_model(mc, name, {}, L).to(device).eval()
        best = {"default": float("inf"), "earlier": float("inf")}
        for _ in range(args.rounds):  # interleaved: the machine's load moves both alike
            best["default"] = min(best["default"], timed(lambda: evaluate_model(model, ResolvedEval(default, L, text=val), device, progress=False)))
            best["earlier"] = min(best["earlier"], timed(lambda: [
                evaluate_model(model, ResolvedEval(e, L, "", text=val), device, progress=False) for e in earlier]))
        lines.append(f"| {name} | {best['earlier']:.1f} | {best['default']:.1f} | {best['default'] / best['earlier']:.2f} |")
        print(lines[-1], flush=True)
    now = next(iter(token_sets_of(ResolvedEval(default, L, text=val)).values()))
    text = (f"# Evaluation cost of the representative scored text\n\n`python scripts/bench_scored_text.py "
            f"--encodings {args.encodings} --train-len {L} --rounds {args.rounds}` on {describe(device)}, one torch "
            f"thread, best of {args.rounds} interleaved rounds; small model, multiples 1..16, nonoverlapping + "
            "sliding, no variants.\n\n"
            f"- earlier default: validation targets [{16 * L}, {16 * L + EARLIER_TOKENS}) ({EARLIER_TOKENS:,} tokens "
            "from the first few documents), each protocol run on its own;\n"
            f"- default now: {now['tokens']:,} tokens from {len(now['docs'])} of the {now['documents_in_split']} "
            "validation documents, windows shared by the two protocols run once.\n\n"
            "| encoding | earlier (s) | now (s) | now / earlier |\n|---|---|---|---|\n" + "\n".join(lines) + "\n")
    print(text)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "scored_text.md").write_text(text)


if __name__ == "__main__":
    main()
