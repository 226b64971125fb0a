"""posbench/cli/help.py: ``--help`` and ``--version`` are posbench's own pages, with the settings
classes' defaults."""

import os

import pytest

from tests.conftest import cli


@pytest.mark.parametrize("program", ["train", "eval"])
def test_help_and_version_are_posbench_s(program, monkeypatch, capsys, cache_dir, tmp_path):
    import importlib
    import sys

    import torch

    from posbench import __version__

    monkeypatch.chdir(tmp_path)
    module = importlib.import_module({"train": "posbench.cli.train", "eval": "posbench.cli.evaluate"}[program])

    def run(*argv) -> tuple[int, str]:
        monkeypatch.setattr(sys, "argv", [f"posbench-{program}", *argv])
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:
            module.main()
        return exc.value.code, capsys.readouterr().out

    code, out = run("--version")
    assert code == 0 and out.startswith(f"posbench {__version__} (torch {torch.__version__}, Python ") and "device: " in out
    code, out = run("--help")
    assert code == 0 and out.startswith(f"posbench-{program}: ") and "Hydra" not in out.splitlines()[0]
    assert "examples:" in out and "docs/" in out and "eval.multiples=[1,2,4,8,16]" in out  # EvalConfig's default
    if program == "train":
        assert "train.steps=600" in out and "encoding        rope;" in out and "model           small;" in out
    else:  # the config groups of posbench-train are not posbench-eval's
        assert "encoding" not in out and "experiment" not in out and "run_dir=<required>" in out
    assert os.listdir(tmp_path) == []
    # Hydra's own pages stay (through an interpreter of its own: Hydra configures this process's logging)
    proc = cli({"train": "posbench.cli.train", "eval": "posbench.cli.evaluate"}[program], "--hydra-help", cwd=tmp_path)
    assert proc.stdout.startswith("Hydra (")


def test_help_s_defaults_are_the_settings_classes_own():
    from posbench.cli.help import help_text
    from posbench.training.trainer import TrainConfig

    assert f"train.lr={TrainConfig().lr:g}" in help_text("config")


def test_help_lists_every_option_of_a_nested_config_group():
    """data/tokenizer's options are in a folder below data/: --help listed only its default."""
    from posbench.cli.help import help_text

    (line,) = [x for x in help_text("config").splitlines() if x.startswith("  data/tokenizer")]
    assert line.split() == ["data/tokenizer", "byte;", "bpe", "file", "hub"]
