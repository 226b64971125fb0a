"""What a job knows of the Hydra command that launched it: whether it is one job of a sweep, its
number, and the command line that makes it again. Read-only facts of the process, not settings
(they are never part of a run's identity), so posbench.jobs.train may ask for them below the
command-line layer; outside Hydra (tests, notebooks) they answer "alone", 0 and None."""

from __future__ import annotations

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import OmegaConf


def in_sweep() -> bool:
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def job_index() -> int:
    """This job's number within a Hydra sweep (0 outside one)."""
    if not HydraConfig.initialized():
        return 0
    return int(OmegaConf.select(HydraConfig.get(), "job.num", default=None) or 0)


def launch_command(program: str) -> str | None:
    """The command line that reproduces this Hydra job on its own (``program`` + its overrides),
    or None outside Hydra. In a sweep it is the one job's command, not the sweep's."""
    if not HydraConfig.initialized():
        return None
    return " ".join([program, *HydraConfig.get().overrides.task])
