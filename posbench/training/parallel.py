"""One run over several processes: data parallel training (PyTorch DistributedDataParallel).

    torchrun --standalone --nproc_per_node=4 -m posbench.cli.train model=medium encoding=rope

``torchrun`` starts the processes and sets RANK, WORLD_SIZE and LOCAL_RANK; each process builds the
same model from the same seed, reads its share of every step's global batch (``train.batch_size``
rows, posbench/training/data.py), and DDP averages the gradients in the backward pass, so every
process takes the optimiser step of the global batch's mean loss: the run of one process at the
same ``train.batch_size``, to float rounding (exactly its mean loss where every target is scored,
as in language modelling; a task that scores some targets weights each share's mean equally).
NCCL on GPUs (process ``LOCAL_RANK`` on ``cuda:LOCAL_RANK``), gloo on CPU.

Only process 0 writes: the run directory, its resume states, snapshots, logs and trackers, and the
evaluation after training. The others read the same resume state at the start, so a killed run
resumes on any number of processes that divides the batch. A Ctrl-C or SIGTERM that reaches one
process stops every one at the same step boundary (the stop request is agreed each step).
Reference: PyTorch's DDP tutorial and torchrun docs (pytorch.org/docs/stable/elastic/run.html);
nanoGPT's train.py (``ddp_rank``, ``master_process``) is the same layout.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from posbench.core.errors import PosbenchError


@dataclass(frozen=True)
class Processes:
    """This process's place in a data-parallel run (rank 0 of 1: a plain run)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @classmethod
    def from_env(cls) -> Processes:
        """What torchrun (or SLURM through it) set; a plain run outside it."""
        env = os.environ
        return cls(int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", 0)))

    @property
    def main(self) -> bool:
        """The process that writes (the run directory, logs, resume states) and evaluates."""
        return self.rank == 0

    def check(self, batch_size: int) -> None:
        if self.world > 1 and batch_size % self.world:
            raise PosbenchError(f"train.batch_size={batch_size} does not divide among {self.world} processes "
                                f"(WORLD_SIZE); use a multiple of {self.world}")

    def device(self, device: torch.device) -> torch.device:
        """This process's device: ``cuda:LOCAL_RANK`` for a CUDA run over several processes."""
        if self.world > 1 and device.type == "cuda":
            torch.cuda.set_device(self.local_rank)
            return torch.device("cuda", self.local_rank)
        return device

    def start(self, device: torch.device) -> None:
        """Join the process group (once; NCCL on CUDA, gloo on CPU)."""
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=self.rank,
                                    world_size=self.world, timeout=datetime.timedelta(hours=2))

    def wrap(self, model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
        """The module the steps call: DDP over ``model`` when several processes train (its
        parameters are ``model``'s, which is what gets saved and evaluated)."""
        if self.world == 1:
            return model
        # every built-in encoding gives each parameter a gradient in a training forward (checked over
        # all 30), so DDP need not search the graph for unused ones each step; a plug-in that leaves one
        # out gets DDP's own error naming find_unused_parameters
        return torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """The mean of ``value`` over the processes (itself in a plain run)."""
        if self.world == 1:
            return value
        value = value.detach().clone()
        dist.all_reduce(value, op=dist.ReduceOp.SUM)
        return value / self.world

    def any(self, flag: bool) -> bool:
        """Whether ``flag`` holds in any process (itself in a plain run)."""
        if self.world == 1:
            return flag
        t = torch.tensor([int(flag)], device=_collective_device())
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return bool(t.item())

    def broadcast(self, value):
        """Process 0's ``value`` in every process (a picklable object)."""
        if self.world == 1:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def _collective_device() -> torch.device:
    # NCCL reduces CUDA tensors only; gloo CPU tensors
    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")


class Word:
    """Process 0's word to the other processes, once per run of a command: whether they train it
    (process 0 alone decides whether a run is done, locked by another command, or to train)."""

    def __init__(self, processes: Processes):
        self.processes, self.given = processes, False

    def give(self, train: bool) -> None:
        """Process 0: say it (once; a later call says nothing)."""
        if not self.given and self.processes.world > 1:
            self.processes.broadcast(train)
        self.given = True

    def wait(self) -> bool:
        """The other processes: wait for process 0's word."""
        return bool(self.processes.broadcast(None))
