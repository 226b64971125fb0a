"""posbench/core/hydra_state.py: what a job knows of the Hydra command that launched it (alone or in a
sweep, its number, the command that makes it again), and "alone, 0, None" outside Hydra."""

import pytest
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import open_dict

from posbench.core.hydra_state import in_sweep, job_index, launch_command


@pytest.fixture
def hydra_job(compose):
    """Hydra's config of job 2 of a sweep ``encoding=alibi seed=3``, installed as a launched job's is
    (``compose``: the configs registered, as the command line does)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from posbench.cli.config import CONF_DIR

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=["encoding=alibi", "seed=3"], return_hydra_config=True)
    with open_dict(cfg):
        cfg.hydra.job.num = 2
        cfg.hydra.mode = RunMode.MULTIRUN
    HydraConfig.instance().set_config(cfg)
    yield cfg
    HydraConfig.instance().cfg = None


def test_outside_hydra_a_job_is_alone_first_and_has_no_command():
    assert not HydraConfig.initialized()
    assert (in_sweep(), job_index(), launch_command("posbench-train")) == (False, 0, None)


def test_a_job_of_a_sweep_knows_its_number_and_its_own_command(hydra_job):
    assert in_sweep() and job_index() == 2
    assert launch_command("posbench-train") == "posbench-train encoding=alibi seed=3"  # the job's, not the sweep's
