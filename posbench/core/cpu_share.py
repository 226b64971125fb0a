"""Whether a CPU run gets the cores its torch threads assume, and a warning with the fix when it does not.

torch's OpenMP threads spin-wait for each other at every parallel region, so a run with 2 threads on a
2-core machine that another process also uses waits for the busy core at every matrix product:
measured on posbench's 2-core machine, the quickstart's first run fell from ~14,000 to 221-342 tokens/s
beside other jobs, while a 1-thread run beside the same jobs kept ~1,000 (measured;
results/bench/threads.md has the sweep-level figures). Two checks, both only on CPU:

* :func:`threads_fit` at the start of a run: the processes other work has running now (sampled from
  /proc/stat for 0.2 s) plus the run's threads against its cores. Where they do not fit, the threads will
  spin-wait: :func:`advice` says what to do. (A timing of multi- against single-thread matrix products
  was tried first and dropped: over a few milliseconds the scheduler often hands the busy core back,
  and on idle cores its ratio ranged 0.7 to 1.4, so it could neither warn nor stay quiet reliably.)
* :class:`SlowdownWatch` during training: each logged interval's tokens/s against the run's own best
  interval so far; an interval below a third of it (other work started meanwhile) warns once.

Neither changes what is computed; they only log.
"""

from __future__ import annotations

import logging
import os
import statistics
import time

import torch

log = logging.getLogger(__name__)

SLOW_FRACTION = 1 / 3  # an interval below this share of the run's best is "fallen far below"
WARMUP_INTERVALS = 2  # the first logged intervals include start-up costs and set no reference


def busy_cores(samples: int = 20, interval: float = 0.01) -> float:
    """How many cores other work keeps busy now: the median over ``samples`` readings (``interval`` s
    apart) of the runnable processes in /proc/stat (``procs_running``), less this one, which is running
    while it reads. Not the load average: over its minute it still counts a sweep's previous run, so the
    next run of a sequential sweep on idle cores would be told the machine is busy. 0 where the system
    does not say (not Linux)."""
    readings = []
    for _ in range(samples):
        try:
            with open("/proc/stat") as f:
                line = next((x for x in f if x.startswith("procs_running")), None)
        except OSError:
            return 0.0
        if line is None:
            return 0.0
        readings.append(max(0, int(line.split()[1]) - 1))
        time.sleep(interval)
    return float(statistics.median(readings))


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def threads_fit(threads: int | None = None, load: float | None = None, cores: int | None = None) -> bool:
    """Whether ``threads`` torch threads find that many cores free: the cores other work keeps busy
    (busy_cores) plus the threads fit in the cores, with half a core of slack.
    One thread always fits (it shares time, it does not spin-wait)."""
    threads = threads or torch.get_num_threads()
    load = busy_cores() if load is None else load
    cores = cores or usable_cores()
    return threads <= 1 or load + threads <= cores + 0.5


def advice(threads: int) -> str:
    """What a user on a shared CPU can do, for a run with ``threads`` torch threads."""
    if threads > 1:
        free = max(1, usable_cores() - 1)
        return (f"run with threads=1 (a sweep: threads=1 hydra/launcher=local_parallel POSBENCH_JOBS=<free cores>, "
                f"e.g. POSBENCH_JOBS={free}); one thread per run only shares time, it does not spin-wait")
    return "the cores are shared: fewer parallel runs (POSBENCH_JOBS) or a quieter machine restore the speed"


def check_threads_at_start(device: torch.device) -> None:
    """Warn (once, at the start of a CPU run) where this run's threads do not find their cores free."""
    threads = torch.get_num_threads()
    if device.type != "cpu" or threads <= 1:  # one thread fits whatever the load: no 0.2 s of sampling per run
        return
    load, cores = busy_cores(), usable_cores()
    if not threads_fit(threads, load, cores):
        log.warning("torch uses %d threads on %d cores, but other work keeps %g of them busy: "
                    "the threads will spin-wait for the busy cores; %s", threads, cores, load, advice(threads))


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
