"""posbench/report/records/selection.py: which runs a report reads (the filter over run ids and configs), what a
smoke run is, and how a folder is named without the absolute path of the machine that made the report."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from posbench.core.errors import PosbenchError
from posbench.report.records.selection import Selection, is_smoke, shown_folder, smoke_settings


def test_the_filter_reads_run_ids_and_config_values_as_yaml():
    config = OmegaConf.create({"train": {"steps": 200, "schedule": "wsd"}, "encoding": {"name": "alibi"}})
    assert Selection(only="alibi_*").keeps("alibi_small_L64_s0_x", config)
    assert not Selection(only="rope_*").keeps("alibi_small_L64_s0_x", config)
    assert Selection(where=("train.steps=200", "train.schedule=wsd")).keeps("r", config)  # 200 a number
    assert not Selection(where=("train.steps=20",)).keeps("r", config)
    assert not Selection(where=("train.missing=1",)).keeps("r", config) and not Selection(where=("a=1",)).keeps("r", None)
    # a key repeated: any of its values; keys apart: every one
    either = ("encoding.name=rope", "encoding.name=alibi")
    assert Selection(where=either).keeps("r", config) and not Selection(where=either[:1]).keeps("r", config)
    assert not Selection(where=(*either, "train.steps=20")).keeps("r", config)
    assert (Selection(where=(*either, "train.steps=20")).describe()
            == "--where encoding.name=rope or encoding.name=alibi and --where train.steps=20")
    with pytest.raises(PosbenchError, match="must be key=value"):
        Selection(where=("train.steps",)).conditions()
    assert not Selection() and Selection(only="x").describe() == "--only x"


def test_a_smoke_run_is_one_with_every_setting_the_smoke_preset_makes():
    smoke = OmegaConf.create({"train": dict(smoke_settings())})
    assert is_smoke(smoke)
    real = OmegaConf.create({"train": {**smoke_settings(), "steps": 600}})
    assert not is_smoke(real) and not is_smoke(None)
    # the branch of a budgets job under train=smoke whose budget is smoke's steps: a budget, not a smoke run
    branch = OmegaConf.create({"train": {**smoke_settings(), "budgets": [10, smoke_settings()["steps"]]}})
    assert not is_smoke(branch)


def test_a_folder_is_never_named_by_an_absolute_path(tmp_path):
    assert shown_folder(Path("runs/budget"), tmp_path) == "runs/budget"  # as given, relative
    runs = tmp_path / "runs" / "budget"
    assert shown_folder(runs, tmp_path / "report") == "../runs/budget"
    assert shown_folder(runs, runs / "report") == "budget"  # the report inside the folder: its own name
    assert not shown_folder(runs, tmp_path).startswith("/")
