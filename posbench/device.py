"""Device choice and mixed precision: CUDA with bf16 autocast when present, CPU fp32 otherwise."""

from __future__ import annotations

import contextlib

import torch

from posbench.errors import PosbenchError


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise PosbenchError(f"device {name!r} asked for, but this torch build sees no CUDA device; use device=cpu or auto")
    return torch.device(name)


def autocast(device: torch.device):
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def describe(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({torch.get_num_threads()} threads)"
