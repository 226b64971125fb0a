"""posbench/core/settings.py: Hydra's schemas are derived from the settings classes."""

import dataclasses

from posbench.core.settings import hydra_schema
from posbench.evaluation.settings import EvalConfig
from posbench.training.trainer import TrainConfig


def test_hydra_schemas_are_derived_from_the_settings_classes():
    """One place for fields and defaults: Hydra's mutable twin has the settings class's own."""
    for cls in (TrainConfig, EvalConfig):
        twin = hydra_schema(cls)()
        assert dataclasses.asdict(twin) == dataclasses.asdict(cls())
