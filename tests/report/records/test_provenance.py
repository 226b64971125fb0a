"""posbench/report/records/provenance.py: how the runs were made: the settings every run shares, the ones that
differ (an encoding's own parameters in one column), and each run's environment."""

import pandas as pd
from omegaconf import OmegaConf

from posbench.report.records.provenance import config_split, flat_config, nested_yaml


def config(name, params, lr=0.002):
    return OmegaConf.create({"encoding": {"name": name, **params}, "train": {"lr": lr, "steps": 20},
                             "runs_dir": f"/tmp/{name}"})


def test_shared_settings_and_the_ones_that_differ():
    configs = {"d/rope": config("rope", {"base": 10000.0}), "d/alibi": config("alibi", {}, lr=0.004)}
    runs = pd.DataFrame({"run_id": ["rope_x", "alibi_y"], "run_dir": ["d/rope", "d/alibi"]})
    shared, differing = config_split(runs, configs)
    assert shared == {"train.steps": 20}  # runs_dir is never a setting
    assert differing.to_dict("records") == [
        {"run_id": "rope_x", "encoding.name": "rope", "train.lr": "0.002", "encoding parameters": "base=10000.0"},
        {"run_id": "alibi_y", "encoding.name": "alibi", "train.lr": "0.004", "encoding parameters": ""}]
    assert "runs_dir" not in flat_config(configs["d/rope"])
    assert nested_yaml({"train.steps": 20, "train.lr": 0.002, "encoding.name": "rope"}) == (
        "encoding: {name: rope}\ntrain: {lr: 0.002, steps: 20}\n")  # a flat {a.b: v} back to nested YAML
