"""Whether a CPU run gets the cores its torch threads assume, and a warning with the fix when it does not.

torch's OpenMP threads spin-wait for each other at every parallel region, so a run with 2 threads on a
2-core machine that another process also uses waits for the busy core at every matrix product:
measured on posbench's 2-core machine, the quickstart's first run fell from ~14,000 to 221-342 tokens/s
beside other jobs, while a 1-thread run beside the same jobs kept ~1,000 (issue 56;
results/bench/threads.md has the sweep-level figures). Two checks, both only on CPU:

* :func:`threads_help` at the start of a run: the best time of a fixed set of matrix products with the
  run's thread count against one thread (about 0.1 s). Where more threads are not faster than one, the
  cores are shared and the threads spin-wait: :func:`advice` says what to do.
* :class:`SlowdownWatch` during training: each logged interval's tokens/s against the run's own best
  interval so far; an interval below a third of it (other work started meanwhile) warns once.

Neither changes what is computed; they only log.
"""

from __future__ import annotations

import logging
import os
import time

import torch

log = logging.getLogger(__name__)

SLOW_FRACTION = 1 / 3  # an interval below this share of the run's best is "fallen far below"
WARMUP_INTERVALS = 2  # the first logged intervals include start-up costs and set no reference


def _best_matmul_seconds(threads: int, size: int = 256, reps: int = 8, trials: int = 3) -> float:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        # a generator of its own: the check must not move the run's random stream (bit-identical resume)
        gen = torch.Generator().manual_seed(0)
        a, b = torch.randn(size, size, generator=gen), torch.randn(size, size, generator=gen)
        a @ b  # warm-up: thread pool start, caches
        best = float("inf")
        for _ in range(trials):
            t = time.perf_counter()
            for _ in range(reps):
                a @ b
            best = min(best, time.perf_counter() - t)
        return best
    finally:
        torch.set_num_threads(before)


def threads_help(threads: int | None = None) -> tuple[bool, float]:
    """(whether ``threads`` torch threads beat one on this machine now, their time over one thread's).
    One thread always "helps" (ratio 1)."""
    threads = threads or torch.get_num_threads()
    if threads <= 1:
        return True, 1.0
    ratio = _best_matmul_seconds(threads) / _best_matmul_seconds(1)
    return ratio < 1.0, ratio


def advice(threads: int) -> str:
    """What a user on a shared CPU can do, for a run with ``threads`` torch threads."""
    if threads > 1:
        free = max(1, (os.cpu_count() or 1) - 1)
        return (f"run with threads=1 (a sweep: threads=1 hydra/launcher=local_parallel POSBENCH_JOBS=<free cores>, "
                f"e.g. POSBENCH_JOBS={free}); one thread per run only shares time, it does not spin-wait")
    return "the cores are shared: fewer parallel runs (POSBENCH_JOBS) or a quieter machine restore the speed"


def check_threads_at_start(device: torch.device) -> None:
    """Warn (once, at the start of a CPU run) where this run's threads do not beat one thread."""
    if device.type != "cpu":
        return
    threads = torch.get_num_threads()
    helps, ratio = threads_help(threads)
    if not helps:
        log.warning("torch uses %d threads here, but %d-thread matrix products ran %.1fx the time of 1-thread ones: "
                    "other work holds the cores and the threads spin-wait; %s", threads, threads, ratio, advice(threads))


class SlowdownWatch:
    """Warns once when a logged interval's training tokens/s falls below SLOW_FRACTION of the run's best."""

    def __init__(self, device: torch.device):
        self.active = device.type == "cpu"
        self.best = 0.0
        self.seen = 0
        self.warned = False

    def update(self, tokens_per_s: float, step: int) -> bool:
        """Record one interval; True where this call warned."""
        if not self.active:
            return False
        self.seen += 1
        if self.seen <= WARMUP_INTERVALS:
            return False
        if self.best and tokens_per_s < SLOW_FRACTION * self.best and not self.warned:
            self.warned = True
            log.warning("training slowed to %.0f tokens/s at step %d, %.0f%% of this run's best %.0f: another process is "
                        "using the cores; %s", tokens_per_s, step, 100 * tokens_per_s / self.best, self.best,
                        advice(torch.get_num_threads()))
            return True
        self.best = max(self.best, tokens_per_s)
        return False
