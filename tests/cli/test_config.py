"""Every preset and every sweep cell composes and passes every check, without training anything:
the fast guard that a config edit breaks no experiment (the slow test trains them)."""

from pathlib import Path

import pytest

from posbench.cli.app import compose_jobs
from posbench.cli.config import CONF_DIR
from posbench.cli.config import to_spec as validate
from posbench.encodings import available

PRESETS = sorted(p.stem for p in (Path(CONF_DIR) / "experiment").glob("*.yaml"))
N = len(available())  # the presets that sweep every encoding grow with the registry
EXPECTED_JOBS = {"alibi_paper": 8, "all_encodings": N, "budget": 36, "budget_lr": 48, "converged": 20, "extension": 240, "lr_grid": 6 * N,
                 "modern": 72, "quick": 5, "reference": 6 * N, "rope_extension": 1, "tasks": 30,
                 "tokenizers": 42}


# the largest sweeps compose hundreds of jobs (25-40 s each on 2 cores): run with -m slow
LARGE = {"extension", "reference", "lr_grid"}


@pytest.mark.parametrize("preset", [pytest.param(p, marks=pytest.mark.slow) if p in LARGE else p for p in PRESETS])
def test_every_preset_composes_into_valid_jobs(preset, cache_dir):
    jobs = compose_jobs("config", [f"experiment={preset}"], multirun=True)
    assert len(jobs) == EXPECTED_JOBS[preset]
    for cfg in jobs:
        validate(cfg)
    if preset in ("all_encodings", "reference", "lr_grid"):
        assert sorted({cfg.encoding.name for cfg in jobs}) == available()
    if preset.startswith("budget"):  # each job a trunk and its branches, every row with its window control
        assert {(cfg.train.schedule, tuple(cfg.train.budgets)) for cfg in jobs} == \
            {("wsd", (600, 1200, 2400, 4800) if preset == "budget" else (1200,))}
        assert {cfg.model.name for cfg in jobs} == {"small"} and len({cfg.encoding.name for cfg in jobs}) == 12
        if preset == "budget":
            assert {cfg.seed for cfg in jobs} == {0, 1, 2} and list(jobs[0].eval.variants) == ["local"]


def test_presets_are_all_known():
    assert sorted(EXPECTED_JOBS) == PRESETS, "a new preset needs its job count here"


@pytest.mark.parametrize("group", ["encoding", "task", "model", "train", "logger"])
def test_every_group_option_composes_and_validates(group, cache_dir):
    for option in sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml")):
        (cfg,) = compose_jobs("config", [f"{group}={option}"], multirun=False)
        validate(cfg)


def test_a_sweep_expands_like_hydras_basic_sweeper(cache_dir):
    jobs = compose_jobs("config", ["encoding=nope,alibi", "train_len=32,64", "seed=3"], multirun=True)
    assert [(c.encoding.name, c.train_len, c.seed) for c in jobs] == [
        ("nope", 32, 3), ("nope", 64, 3), ("alibi", 32, 3), ("alibi", 64, 3)]
