"""posbench/core/device.py: a CPU run names the instruction set of its kernels; on a GPU, ``device=auto``
picks CUDA with TF32 and spreads a sweep's jobs over the GPUs (marked ``cuda``: skipped without one;
scripts/gpu_check.sh runs it there)."""

import contextlib
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


@pytest.fixture
def restored_precision():
    """Whatever a test sets, the process's precision and TF32 flags as they were."""
    from posbench.core import device

    saved = (device._precision, torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    yield
    device._precision, torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_fp32_precision_keeps_a_cuda_run_out_of_autocast_and_tf32_and_says_so(restored_precision):
    """precision=fp32 is what lets a GPU run's numbers join a CPU study: no bf16 autocast, no TF32."""
    import warnings

    from posbench.core.device import Runtime, autocast, set_precision

    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True  # as auto leaves them on a GPU
    Runtime(precision="fp32").apply()
    assert isinstance(autocast(torch.device("cuda")), contextlib.nullcontext)
    assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    set_precision("auto")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a CPU-only torch warns that CUDA autocast is off
        assert isinstance(autocast(torch.device("cuda")), torch.autocast)
    assert isinstance(autocast(torch.device("cpu")), contextlib.nullcontext)  # CPU runs are fp32 either way


def test_an_unknown_precision_is_one_line_naming_the_valid_ones():
    from posbench.core.device import Runtime
    from posbench.core.errors import PosbenchError

    with pytest.raises(PosbenchError, match=r"unknown precision 'fp16'; valid: auto, fp32"):
        Runtime(precision="fp16").check()


@pytest.mark.cuda
def test_fp32_precision_trains_and_scores_in_fp32_on_cuda(restored_precision):
    from posbench.core.device import Runtime, autocast, describe
    from posbench.model.transformer import ModelConfig, build_model

    Runtime(precision="fp32").apply()
    device = resolve_device("cuda")
    assert describe(device).endswith(", fp32)")
    model = build_model(ModelConfig(name="t", d_model=64, n_layers=2, n_heads=4, mlp_ratio=2), "rope", {}, 32, 32).to(device)
    with torch.no_grad(), autocast(device):
        assert model(torch.randint(0, 256, (2, 32), device=device)).dtype == torch.float32
    assert not torch.backends.cuda.matmul.allow_tf32  # resolve_device's _cuda leaves TF32 off
