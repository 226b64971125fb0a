"""posbench/core/device.py: a CPU run names the instruction set of its kernels; on a GPU, ``device=auto``
picks CUDA with TF32 and spreads a sweep's jobs over the GPUs (marked ``cuda``: skipped without one;
scripts/gpu_check.sh runs it there)."""

import os
import subprocess
import sys

import pytest
import torch

from posbench.core.device import describe, resolve_device


@pytest.mark.cuda
def test_auto_device_is_cuda_with_tf32_and_jobs_spread_over_gpus():
    n = torch.cuda.device_count()
    for job in range(2 * n):
        assert resolve_device("auto", job) == torch.device(f"cuda:{job % n}")
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32


def test_a_cpu_device_names_the_kernels_instruction_set_that_decides_its_rounding():
    """A CPU run reproduces bit for bit only on the same instruction set, so the record names it."""
    assert describe(torch.device("cpu")).endswith(f" threads, {torch.backends.cpu.get_cpu_capability()})")
    forced = subprocess.run(
        [sys.executable, "-c", "import torch; from posbench.core.device import describe; "
         "torch.set_num_threads(1); print(describe(torch.device('cpu')))"],
        env={**os.environ, "ATEN_CPU_CAPABILITY": "default"}, capture_output=True, text=True, check=True)
    assert forced.stdout.strip() == "cpu (1 threads, DEFAULT)"
