"""How a CPU sweep should use its cores: one job with all threads, or one single-thread job per core.

    python scripts/bench_threads.py                      # 4 runs, idle and beside one CPU-bound job
    python scripts/bench_threads.py --steps 40 --conditions idle --out /tmp/threads

Runs the same small sweep (``posbench-train -m``: 4 encodings, the small model at train_len 64,
``--steps`` steps each, evaluated at 1x and 16x) in two layouts:

  * ``sequential, threads=<cores>``: Hydra's basic launcher, one run at a time with torch's default
    thread count (every core): what a bare ``posbench-train -m`` did before jobs were given one thread each;
  * ``parallel, threads=1``: ``hydra/launcher=local_parallel threads=1``, one single-thread run per core;

each on idle cores and beside one other CPU-bound process (a busy-loop: what another user's job does
to a shared machine). Writes threads.csv and threads.md (wall time per sweep, tokens/s the runs
logged, and each layout's time over the parallel layout's on the same condition) into --out.
Why it matters: torch's OpenMP threads spin-wait for each other, so a 2-thread run that loses one
core to another process waits at every parallel region; single-thread runs only share time.
The wall times come from one run on one machine; compare within the file only.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ENCODINGS = "nope,rope,alibi,sinusoidal"
LAYOUTS = {
    "sequential, threads=all": ["hydra/launcher=basic"],
    "parallel, threads=1": ["hydra/launcher=local_parallel", "threads=1"],
}
BUSY_LOOP = "while True: pass"


def sweep(layout: list[str], steps: int, runs_dir: Path, timeout: float) -> tuple[float, bool]:
    """Wall seconds of one sweep (and whether it finished before ``timeout``)."""
    cmd = [sys.executable, "-m", "posbench.cli.train", "-m", f"encoding={ENCODINGS}", "model=small",
           "train_len=64", f"train.steps={steps}", "train.val_every=1000000", "eval.multiples=[1,16]",
           "eval.protocols=[nonoverlapping]", "eval.variants=[]", f"runs_dir={runs_dir}", *layout]
    env = {**os.environ, "POSBENCH_JOBS": str(os.cpu_count() or 1), "WANDB_MODE": "disabled",
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.pop("OMP_NUM_THREADS", None)  # the basic layout must get torch's default thread count
    t = time.perf_counter()
    try:
        subprocess.run(cmd, env=env, check=True, timeout=timeout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return time.perf_counter() - t, True
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t, False


def logged_tokens_per_s(runs_dir: Path) -> float:
    """Median over runs of each run's median logged training tokens/s (history.json)."""
    rates = []
    for history in runs_dir.rglob("history.json"):
        values = [e["tokens_per_s"] for e in json.loads(history.read_text()) if "tokens_per_s" in e]
        if values:
            rates.append(float(pd.Series(values).median()))
    return float(pd.Series(rates).median()) if rates else float("nan")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--conditions", default="idle,busy", help="idle, busy (beside one CPU-bound process), or both")
    ap.add_argument("--timeout", type=float, default=600, help="seconds before a sweep is cut (reported as '>')")
    ap.add_argument("--out", type=Path, default=Path("results/bench"))
    args = ap.parse_args(argv)
    rows = []
    for condition in args.conditions.split(","):
        if condition not in ("idle", "busy"):
            sys.exit(f"unknown condition {condition!r}; valid: idle, busy")
        burner = subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) if condition == "busy" else None
        try:
            for name, layout in LAYOUTS.items():
                with tempfile.TemporaryDirectory() as tmp:
                    wall, finished = sweep(layout, args.steps, Path(tmp), args.timeout)
                    rows.append({"condition": condition, "layout": name, "wall_s": round(wall, 1),
                                 "finished": finished, "tokens_per_s": round(logged_tokens_per_s(Path(tmp)))})
                print(rows[-1], flush=True)
        finally:
            if burner is not None:
                burner.kill()
    frame = pd.DataFrame(rows)
    parallel = frame[frame.layout == "parallel, threads=1"].set_index("condition").wall_s
    frame["time / parallel"] = (frame.wall_s / frame.condition.map(parallel)).round(2)
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out / "threads.csv", index=False)
    command = "python scripts/bench_threads.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    table = frame.assign(wall_s=[f"{w}" if f else f"> {w}" for w, f in zip(frame.wall_s, frame.finished)])
    (args.out / "threads.md").write_text(
        "# Sweep layout on this machine's cores\n\n"
        f"`{command.strip()}` ({os.cpu_count()} cores; {ENCODINGS.count(',') + 1} runs of {args.steps} steps, "
        "small model, train_len 64, evaluated at 1x and 16x; busy: beside one CPU-bound process).\n\n"
        + table.drop(columns="finished").to_markdown(index=False) + "\n")
    print((args.out / "threads.md").read_text())


if __name__ == "__main__":
    main()
