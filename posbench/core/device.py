"""Device choice and mixed precision: CUDA with bf16 autocast (and TF32) when present, CPU fp32 otherwise;
``precision=fp32`` keeps a CUDA run in fp32 throughout, the CPU's arithmetic (its kernels' order of sums
aside), so that its numbers can stand beside CPU runs' in one study (results/map/RECORDS.md measures
how far such a run lands from the CPU's: a fraction of the seeds' spread)."""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Optional

import torch

from posbench.core.errors import PosbenchError

ATTENTION_SETTINGS = ("auto", "flex", "chunked")
PRECISIONS = ("auto", "fp32")  # auto: bf16 autocast + TF32 on CUDA, fp32 on CPU; fp32: fp32 on every device

# torch keeps the matmul precision per process, so the choice is too (set by Runtime.apply, read by
# autocast and _cuda); one process runs one Runtime
_precision = "auto"


@dataclass(frozen=True)
class Runtime:
    """Where and how a command runs; shared by posbench-train and posbench-eval, and never part of
    what a run is (its id). In the config these are top-level keys."""

    device: str = "auto"  # auto | cpu | cuda | cuda:N (auto: CUDA with bf16 autocast when present)
    threads: Optional[int] = None  # torch CPU threads per run; None: torch's default (all cores)
    attention: str = "auto"  # bias encodings: auto | flex | chunked (posbench/attention/kernels.py)
    compile: bool = False  # torch.compile each block of the training forward (speed only; regional)
    precision: str = "auto"  # auto | fp32 (fp32: no bf16 autocast and no TF32 on CUDA; CPU runs are fp32 either way)

    def check(self) -> None:
        check_device(self.device)
        if self.attention not in ATTENTION_SETTINGS:
            raise PosbenchError(f"unknown attention {self.attention!r}; valid: {', '.join(ATTENTION_SETTINGS)}")
        if self.threads is not None and self.threads < 1:
            raise PosbenchError(f"threads must be a positive integer or null, got {self.threads}")
        if self.precision not in PRECISIONS:
            raise PosbenchError(f"unknown precision {self.precision!r}; valid: {', '.join(PRECISIONS)}")

    def apply(self) -> None:
        """The settings torch keeps per process: CPU threads and the precision of CUDA's arithmetic."""
        if self.threads:
            torch.set_num_threads(self.threads)
        set_precision(self.precision)


def set_precision(precision: str) -> None:
    global _precision
    _precision = precision
    tf32 = precision == "auto" and torch.cuda.is_available()
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def check_device(name: str) -> None:
    """A device this machine has: ``auto``, ``cpu``, or ``cuda``/``cuda:N`` where CUDA sees GPU N."""
    name = str(name)
    if name in ("auto", "cpu"):
        return
    if not re.fullmatch(r"cuda(:\d+)?", name):
        raise PosbenchError(f"unknown device {name!r}; valid: auto, cpu, cuda, cuda:N")
    if not torch.cuda.is_available():
        raise PosbenchError(f"device {name!r} asked for, but this torch build sees no CUDA device; use device=cpu or auto")
    index = int(name.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise PosbenchError(f"device {name!r}: this machine has {torch.cuda.device_count()} CUDA device(s), cuda:0..")


def resolve_device(name: str, job_index: int = 0) -> torch.device:
    """``auto``: CUDA when present, else CPU. On a box with several GPUs, parallel sweep jobs
    spread over them (job i gets GPU i mod count), so a local parallel sweep uses one GPU per job."""
    if name == "auto":
        if not torch.cuda.is_available():
            return torch.device("cpu")
        return _cuda(torch.device(f"cuda:{job_index % torch.cuda.device_count()}"))
    check_device(name)
    device = torch.device(name)
    return _cuda(device) if device.type == "cuda" else device


def _cuda(device: torch.device) -> torch.device:
    # TF32 for the fp32 matmuls left outside bf16 autocast (optimizer, loss): ~3x on Ampere and later
    if _precision == "auto":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    return device


def autocast(device: torch.device):
    if device.type == "cuda" and _precision == "auto":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def describe(device: torch.device) -> str:
    """The device as metrics.json and the report's environment table name it. On CPU it names the
    instruction set torch dispatches its kernels to (AVX512, AVX2, ...): the same run on a CPU of
    another set rounds differently (measured: NoPE's validation loss after 600 steps, 2.01396 with
    AVX-512 kernels and 2.01400 forced to AVX2), and training amplifies that, so CPU runs reproduce
    bit for bit only on the same set."""
    if device.type == "cuda":
        arithmetic = "bf16 autocast, TF32" if _precision == "auto" else "fp32"
        return f"cuda ({torch.cuda.get_device_name(device)}, {arithmetic})"
    return f"cpu ({torch.get_num_threads()} threads, {torch.backends.cpu.get_cpu_capability()})"
