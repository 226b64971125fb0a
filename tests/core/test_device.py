"""posbench/core/device.py on a GPU: ``device=auto`` picks CUDA with TF32 and spreads a sweep's jobs
over the GPUs (marked ``cuda``: skipped without one; scripts/gpu_check.sh runs it there)."""

import pytest
import torch

from posbench.core.device import resolve_device


@pytest.mark.cuda
def test_auto_device_is_cuda_with_tf32_and_jobs_spread_over_gpus():
    n = torch.cuda.device_count()
    for job in range(2 * n):
        assert resolve_device("auto", job) == torch.device(f"cuda:{job % n}")
    assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
