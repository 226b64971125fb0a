"""Where an encoding's time goes: torch.profiler over one 16x evaluation pass and a few training steps,
the operators with the largest share of self CPU time, for the rows that miss the benchmark's targets.

    python scripts/bench_profile.py --encodings fire,transformer_xl --out results/bench/profiles.md

Same models as scripts/bench.py (its model, train_len and batch; random bytes), one thread so that the
shares do not depend on what else runs. The shares are what carries over; the absolute times do not.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import make_model, model_config  # noqa: E402  (the benchmark's own models: one definition)

from posbench.encodings import available  # noqa: E402


def top_ops(prof, n: int) -> list[tuple[str, float, float]]:
    """(operator, share of all self CPU time, self CPU ms) for the n largest."""
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events) or 1.0
    ranked = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:n]
    return [(e.key, e.self_cpu_time_total / total, e.self_cpu_time_total / 1e3) for e in ranked]


def profile_eval(name: str, mc, train_len: int, batch_tokens: int, n: int):
    length = 16 * train_len
    model = make_model(name, mc, train_len).eval()
    x = torch.randint(0, 256, (max(1, batch_tokens // length), length))
    with torch.inference_mode():
        model(x)  # warm-up (flex attention compiles here)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            model(x)
    return top_ops(prof, n)


def profile_train(name: str, mc, train_len: int, batch: int, steps: int, n: int):
    model = make_model(name, mc, train_len)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 256, (batch, train_len + 1))

    def step():
        logits = model(x[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step()  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
    return top_ops(prof, n)


def table(rows: list[tuple[str, float, float]]) -> str:
    lines = ["| operator | share of self CPU time | self CPU ms |", "|:--|--:|--:|"]
    lines += [f"| `{op}` | {share:.1%} | {ms:.0f} |" for op, share, ms in rows]
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encodings", required=True, help="comma-separated encodings (nope is added as the baseline)")
    ap.add_argument("--model", default="small")
    ap.add_argument("--train-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=3, help="profiled training steps")
    ap.add_argument("--eval-tokens", type=int, default=16384)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    names = ["nope"] + [n for n in args.encodings.split(",") if n and n != "nope"]
    if unknown := [n for n in names if n not in available()]:
        sys.exit(f"bench_profile: error: unknown encoding {unknown[0]!r}; valid: {', '.join(available())}")
    torch.set_num_threads(1)
    started = time.perf_counter()
    mc = model_config(args.model)
    parts = []
    for name in names:
        print(f"profiling {name}", flush=True)
        parts.append(f"## {name}\n\nEvaluation, one pass at {16 * args.train_len} tokens:\n\n"
                     + table(profile_eval(name, mc, args.train_len, args.eval_tokens, args.top))
                     + f"\n\nTraining, {args.steps} steps of {args.batch} x {args.train_len} (forward, backward, AdamW):\n\n"
                     + table(profile_train(name, mc, args.train_len, args.batch, args.steps, args.top)) + "\n")
    header = (f"# Where the time goes: profiles of the benchmark's slow rows\n\nCommand: `python scripts/bench_profile.py "
              f"{shlex.join(argv if argv is not None else sys.argv[1:])}` ({(time.perf_counter() - started) / 60:.1f} min; "
              f"torch {torch.__version__}, 1 thread, model `{args.model}`, train_len {args.train_len})\n\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(header + "\n".join(parts))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
