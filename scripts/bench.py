"""posbench benchmark: what the harness costs, per encoding, against a plain GPT, in one process.

    python scripts/bench.py                       # small model, train_len 128, batch 32 (the defaults)
    python scripts/bench.py --encodings nope,alibi --steps 5 --out /tmp/bench
    python scripts/bench.py --encodings nope --hybrids gdn,mamba2,samba --out /tmp/bench   # layer patterns

For each encoding (and the reference: posbench.model.reference_gpt.PlainGPT, same size, causal SDPA, no
positional code):
  * training tokens/s through the real training loop (posbench.training.trainer.train_model), and model FLOPs
    utilisation = tokens/s x (6 N + 12 layers L d) / matmul peak, the peak measured here first;
  * evaluation (forward) time (the fastest of three passes after a warm-up) and peak memory at 1x and
    16x the training length, each length in a fresh process on CPU (peak RSS growth), in this process
    with CUDA's peak-allocation counter on a GPU.
``--hybrids`` adds rows of conf/hybrid/ presets (a model's layer pattern and its attention layers'
encoding: recurrent and hybrid models), named ``+hybrid=<preset>``, each at the --model's
size with the preset's pattern (its model keys: mixers, name) and encoding. Their FLOPs count is the same 6 N + 12 layers L d (a recurrent layer's state
updates are not counted, so their MFU is a rough figure).
``--compile`` trains through regional torch.compile (each block compiled in place:
posbench.training.trainer.compiled_blocks); on CUDA training is bf16 autocast with fused AdamW.
``--reference-once`` times the reference once per round instead of right before each encoding (a
dedicated GPU, where drift is not what spoils a ratio and every extra run pays a compile).
Writes bench.csv and bench.md (ratios: training vs the reference, evaluation vs nope) into --out:
first every row's training figures, then again after each row's evaluation, so a run stopped by a
time limit leaves what it measured.
Ratios come from one run on one machine; the machine is noisy, so compare within a file only.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import queue
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from omegaconf import OmegaConf

from posbench.cli.config import CONF_DIR
from posbench.core.device import describe, resolve_device
from posbench.encodings import available
from posbench.model.reference_gpt import PlainGPT
from posbench.model.transformer import ModelConfig, build_model
from posbench.training.data import TrainingData
from posbench.training.hooks import Hooks
from posbench.training.trainer import TrainConfig, train_model

REFERENCE = "reference_gpt"
MODEL_DIR = Path(CONF_DIR) / "model"  # the same size definitions as `model=` in posbench-train
HYBRID_DIR = Path(CONF_DIR) / "hybrid"  # experiment=hybrids' rows: a layer pattern and an encoding each
HYBRID = "+hybrid="


def model_config(name: str) -> ModelConfig:
    raw = OmegaConf.to_container(OmegaConf.load(MODEL_DIR / f"{name}.yaml"))
    base = {}
    for parent in raw.pop("defaults", []):  # a preset on top of another (small_gdn: small + mixers)
        if parent != "_self_":
            base = OmegaConf.to_container(OmegaConf.load(MODEL_DIR / f"{parent}.yaml"))
    return ModelConfig(**{**base, **raw})


def hybrid_row(name: str, mc: ModelConfig) -> tuple[ModelConfig, str, dict]:
    """(model, encoding, encoding params) of conf/hybrid/<name>.yaml at mc's size."""
    raw = OmegaConf.to_container(OmegaConf.load(HYBRID_DIR / f"{name}.yaml"))
    picked = {k.split("/")[-1].strip(): v for d in raw.get("defaults", []) if isinstance(d, dict) for k, v in d.items()}
    model = {**vars(mc), **raw.get("model", {})}  # the preset's pattern (mixers, name) at mc's size
    enc = OmegaConf.to_container(OmegaConf.load(Path(CONF_DIR) / "encoding" / f"{picked['encoding']}.yaml"))
    params = {k: v for k, v in {**enc, **raw.get("encoding", {})}.items() if k != "name"}
    return ModelConfig(**model), enc["name"], params


def make_model(name: str, mc: ModelConfig, train_len: int):
    torch.manual_seed(0)
    if name == REFERENCE:
        return PlainGPT(mc)
    if name.startswith(HYBRID):
        return build_model(*hybrid_row(name[len(HYBRID):], mc), train_len)
    return build_model(mc, name, {}, train_len)


def matmul_peak(device: torch.device, sizes=(1024, 2048, 3072), trials: int = 3, reps: int = 5) -> float:
    """Best FLOP/s of square matmuls over a few sizes and trials (single timings on a shared
    machine vary by 1.5x): fp32 on CPU, bf16 on CUDA (what training uses there)."""
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    best = 0.0
    for n in sizes:
        a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
        for _ in range(2):
            a @ b
        for _ in range(trials):
            sync(device)
            t = time.perf_counter()
            for _ in range(reps):
                a @ b
            sync(device)
            best = max(best, 2 * n**3 * reps / (time.perf_counter() - t))
    return best


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_flops_per_token(model, mc: ModelConfig, train_len: int) -> float:
    """6 N (weights, forward + backward) + 12 layers L d (attention scores and mixing), PaLM's count."""
    n = sum(p.numel() for p in model.parameters()) - mc.vocab * mc.d_model  # embeddings do no matmul
    return 6 * n + 12 * mc.n_layers * train_len * mc.d_model


def train_throughput(name, mc, train_len, batch, steps, device, compile=False) -> tuple[float, object]:
    model = make_model(name, mc, train_len).to(device)
    tc = TrainConfig(steps=steps + 3, batch_size=batch, warmup_steps=1, log_every=1, val_every=10**9, val_batches=1)
    tokens = np.random.default_rng(0).integers(0, 256, 1 << 20, dtype=np.uint8)
    result = train_model(model, TrainingData(tokens, tokens[: 1 << 16], train_len, seed=0), tc, device,
                         hooks=Hooks(desc=f"bench {name}"), compile=compile)
    rates = [h["tokens_per_s"] for h in result["history"][3:]]  # the first steps warm up allocators
    return statistics.median(rates), model


def _eval_once(name, mc, train_len, length, batch_tokens, device_name, results):
    device = resolve_device(device_name)
    model = make_model(name, mc, train_len).to(device).eval()
    x = torch.randint(0, 256, (max(1, batch_tokens // length), length), device=device)
    with torch.inference_mode():
        t = time.perf_counter()
        model(x)  # warm-up: allocator, kernels, and flex attention's one-off compilation (timed apart)
        sync(device)
        first = time.perf_counter() - t
        # the peak is taken after the warm-up, so that it measures the pass and not the compiler
        base_rss = _reset_peak_rss()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
            base_cuda = torch.cuda.memory_allocated(device)
        times = []
        for _ in range(3):  # the fastest of three passes: a shared machine only ever adds time
            t = time.perf_counter()
            model(x)
            sync(device)
            times.append(time.perf_counter() - t)
        seconds = min(times)
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device) - base_cuda
    else:
        peak = _status_kib("VmHWM") * 1024 - base_rss
    results.put((seconds, max(peak, 0), first))


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def _reset_peak_rss() -> int:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS and return it, in bytes.
    (getrusage's ru_maxrss cannot be reset and, on Linux, carries the parent's peak across exec.)"""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_kib("VmRSS") * 1024


def eval_cost(name, mc, train_len, length, batch_tokens, device_name) -> tuple:
    """(seconds, peak bytes, first-call seconds) of a forward pass (the fastest of three) over batch_tokens tokens in
    windows of `length`: on CPU in a fresh process, so each peak RSS is its own; on CUDA in this process, whose
    peak-allocation counter resets per measurement (a fresh CUDA process costs seconds of start-up a pass, which
    a GPU's few minutes cannot spare; the first-call column then holds the kernels this process has not yet run)."""
    if resolve_device(device_name).type == "cuda":
        results = queue.SimpleQueue()
        _eval_once(name, mc, train_len, length, batch_tokens, device_name, results)
        return results.get()
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    proc = ctx.Process(target=_eval_once, args=(name, mc, train_len, length, batch_tokens, device_name, results))
    proc.start()
    result = results.get()
    proc.join()
    return result


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="small", choices=sorted(p.stem for p in MODEL_DIR.glob("*.yaml")))
    ap.add_argument("--train-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=8, help="timed training steps (after 3 warm-up steps)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating reference/encoding training measurements")
    ap.add_argument("--eval-tokens", type=int, default=16384, help="tokens per evaluation forward pass")
    ap.add_argument("--encodings", default=",".join(available()), help="comma-separated; the reference is always added")
    ap.add_argument("--hybrids", default="", help="comma-separated presets of conf/hybrid/ (e.g. gdn,mamba2,samba)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--out", type=Path, default=Path("results/bench"))
    ap.add_argument("--compile", action="store_true", help="train through regional torch.compile")
    ap.add_argument("--reference-once", action="store_true",
                    help="time the reference once per round, not before each encoding (a dedicated GPU)")
    ap.add_argument("--note", default="", help="a line for bench.md on the conditions (e.g. what else ran)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    names = [REFERENCE] + [n for n in args.encodings.split(",") if n]
    unknown = [n for n in names[1:] if n not in available()]
    if unknown:
        sys.exit(f"posbench-bench: error: unknown encoding {unknown[0]!r}; valid: {', '.join(available())}")
    presets = sorted(p.stem for p in HYBRID_DIR.glob("*.yaml"))
    if unknown := [h for h in args.hybrids.split(",") if h and h not in presets]:
        sys.exit(f"posbench-bench: error: unknown hybrid preset {unknown[0]!r}; valid: {', '.join(presets)}")
    names += [HYBRID + h for h in args.hybrids.split(",") if h]
    device, mc = resolve_device(args.device), model_config(args.model)
    L, L16 = args.train_len, 16 * args.train_len

    peak = matmul_peak(device)
    print(f"{describe(device)}: measured matmul peak {peak / 1e9:.1f} GFLOP/s")
    train = lambda name, steps: train_throughput(name, mc, L, args.batch, steps, device, args.compile)  # noqa: E731
    train(REFERENCE, 3)  # warm-up, discarded: the first model pays for it
    # Training: `rounds` passes over all models, each encoding timed right after the reference, so
    # slow drifts of a shared machine hit both sides of a ratio; the median ratio is reported.
    ratios, rates, models = {n: [] for n in names}, {n: [] for n in names}, {}
    failed: dict[str, str] = {}  # a row whose training raised: its error, and no figures (the others go on)
    for r in range(args.rounds):
        ref_rate = train(REFERENCE, args.steps)[0] if args.reference_once else None
        for name in [n for n in names[1:] or names if n not in failed]:
            if not args.reference_once:
                ref_rate = train(REFERENCE, args.steps)[0]
            try:
                rate, models[name] = train(name, args.steps)
            except Exception as e:  # noqa: BLE001 - one row's failure (a compiler's, say) must not lose the others
                failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                print(f"{name}: training failed ({failed[name]}); its row is left empty", flush=True)
                continue
            rates[REFERENCE].append(ref_rate)
            rates[name].append(rate)
            ratios[name].append(rate / ref_rate)
        print(f"training round {r + 1}/{args.rounds} done", flush=True)
    models.setdefault(REFERENCE, make_model(REFERENCE, mc, L))
    nan = float("nan")
    rows = []
    for name in names:  # the training figures of every row first: a time limit during evaluation keeps them
        model = models[name] if name in models else make_model(name, mc, L)
        tok_s = statistics.median(rates[name]) if rates[name] else nan
        rows.append({"encoding": name, "params": sum(p.numel() for p in model.parameters()), "train_tok_s": tok_s,
                     "train_vs_reference": statistics.median(ratios[name]) if ratios[name] else (1.0 if name == REFERENCE else nan),
                     "mfu": tok_s * train_flops_per_token(model, mc, L) / peak,
                     **{f"eval_{tag}_{what}": nan for tag in ("1x", "16x") for what in ("s", "peak_mb", "first_s")}})
    write_tables(rows, args, argv, device, peak, started, failed)
    for row in rows:
        name = row["encoding"]
        for tag, length in (("1x", L), ("16x", L16)):
            if name in failed or (name == "learned" and length > L):  # failed, or not defined past its table
                continue
            seconds, peak_bytes, first = eval_cost(name, mc, L, length, args.eval_tokens, args.device)
            row[f"eval_{tag}_s"], row[f"eval_{tag}_peak_mb"] = seconds, peak_bytes / 2**20
            row[f"eval_{tag}_first_s"] = first  # includes flex attention's compilation where it runs
        print(f"{name:18s} train {row['train_vs_reference']:.2f} x ref  MFU {row['mfu']:6.1%}  eval 16x {row['eval_16x_s']:.3g} s "
              f"{row['eval_16x_peak_mb']:.0f} MB", flush=True)
        write_tables(rows, args, argv, device, peak, started, failed)


def write_tables(rows: list[dict], args, argv, device, peak: float, started: float, failed: dict[str, str]) -> None:
    """bench.csv and bench.md of the rows measured so far (ratios against the reference and nope)."""
    L, L16 = args.train_len, 16 * args.train_len
    df = pd.DataFrame(rows)
    ref = df.set_index("encoding").loc[REFERENCE]  # the first row
    nope = df.set_index("encoding").loc["nope"] if "nope" in set(df["encoding"]) else None
    df.loc[df["encoding"] == REFERENCE, "train_vs_reference"] = 1.0
    base = nope if nope is not None else ref
    df["eval_16x_time_vs_nope"] = df["eval_16x_s"] / base["eval_16x_s"]
    df["eval_16x_mem_vs_nope"] = df["eval_16x_peak_mb"] / base["eval_16x_peak_mb"]
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "bench.csv", index=False)
    header = (f"# posbench benchmark\n\nDevice: {describe(device)}; torch {torch.__version__}; Python "
              f"{platform.python_version()}; measured matmul peak {peak / 1e9:.1f} GFLOP/s.\n"
              f"Model `{args.model}`, train_len {L}, batch {args.batch}; evaluation at {L} and {L16} tokens, "
              f"{args.eval_tokens} tokens per forward pass.\n\nCommand: `python scripts/bench.py "
              f"{shlex.join(argv if argv is not None else sys.argv[1:])}` ({(time.perf_counter() - started) / 60:.1f} min)\n\n"
              + (f"{args.note}\n\n" if args.note else "")
              + "".join(f"Training failed, row left empty: `{n}` ({e})\n\n" for n, e in failed.items()))
    shown = df[["encoding", "train_tok_s", "train_vs_reference", "mfu", "eval_1x_s", "eval_16x_s", "eval_16x_time_vs_nope",
                "eval_16x_peak_mb", "eval_16x_mem_vs_nope", "eval_16x_first_s"]]
    (args.out / "bench.md").write_text(header + shown.to_markdown(index=False, floatfmt=".3g") + "\n")
    print(f"wrote {args.out / 'bench.csv'} and {args.out / 'bench.md'} ({len(rows)} rows)", flush=True)


if __name__ == "__main__":
    main()
