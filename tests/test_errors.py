"""Bad input: one line naming the value and what is valid, non-zero exit, nothing written."""

import math
import os
import subprocess
import sys

import pytest

from posbench.errors import PosbenchError


def run_train(*overrides):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "posbench.train", *overrides], capture_output=True, text=True, env=env)


@pytest.mark.parametrize(
    "override, expected",
    [
        ("model.n_heads=3", "model.d_model=128 is not divisible by model.n_heads=3"),
        ("train_len=0", "train_len must be a positive integer, got 0"),
        ("eval.multiples=[1,-2]", "eval.multiples must be positive, got -2; e.g. [1,2,4,8,16]"),
        ("+encoding.bsae=2", "encoding 'rope' has no parameter 'bsae'; valid: base"),
    ],
)
def test_bad_values_give_one_line_and_write_nothing(tmp_path, cache_dir, override, expected):
    proc = run_train(override, f"runs_dir={tmp_path / 'runs'}")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"posbench: error: {expected}"
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists() or not any(p.name != ".hydra" for p in (tmp_path / "runs").iterdir())


@pytest.mark.parametrize(
    "override, group, bad",
    [("encoding=ropee", "encoding", "ropee"), ("-m encoding=rope,ropee", "encoding", "ropee"),
     ("model=huge", "model", "huge"), ("data=wikitext", "data", "wikitext"), ("experiment=nope", "experiment", "nope")],
)
def test_unknown_config_choice_is_one_line_naming_the_valid_ones(tmp_path, override, group, bad):
    from pathlib import Path

    from posbench.config import CONF_DIR

    proc = run_train(*override.split(), f"runs_dir={tmp_path / 'runs'}")
    valid = ", ".join(sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml")))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"posbench: error: unknown {group} {bad!r}; valid: {valid}"
    assert not (tmp_path / "runs").exists()


def test_divergence_is_recorded_not_raised(compose, tmp_path, text_corpus):
    from posbench.results import read_metrics
    from posbench.train import run

    cfg = compose(
        "model=tiny", "train=smoke", "train_len=16", "train.lr=1e12", "train.warmup_steps=1", "train.grad_clip=1e30",
        "data=local", f"data.path={text_corpus}", f"runs_dir={tmp_path}",
    )
    run_dir = run(cfg)
    m = read_metrics(run_dir)
    assert m["status"] == "diverged" and m["evaluations"] == []
    assert not math.isfinite(m["final_train_loss"] if m["final_train_loss"] is not None else float("nan"))


def test_truncated_checkpoint_is_a_clear_error(tmp_path):
    from posbench.results import load_checkpoint

    (tmp_path / "checkpoint.pt").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(PosbenchError, match="truncated or not a posbench checkpoint"):
        load_checkpoint(tmp_path)
    with pytest.raises(PosbenchError, match="no checkpoint"):
        load_checkpoint(tmp_path / "missing")


@pytest.mark.parametrize("encoding", ["rope", "xpos"])
def test_rotary_encodings_need_an_even_head_dimension(tmp_path, encoding):
    proc = run_train(f"encoding={encoding}", "model.d_model=36", "model.n_heads=4", f"runs_dir={tmp_path / 'runs'}")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"posbench: error: {encoding} needs an even head dimension, got d_model/n_heads = 9"


def test_train_len_longer_than_the_validation_data_allows(tmp_path, cache_dir):
    corpus = tmp_path / "small.txt"
    corpus.write_text("tiny corpus " * 200)  # 2,400 bytes: validation gets the last 5%
    proc = run_train("data=local", f"data.path={corpus}", "train_len=512", f"runs_dir={tmp_path / 'runs'}")
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("posbench: error: validation split has 121 tokens, too few for the longest evaluation window")
    assert "Traceback" not in proc.stderr
    assert not list((tmp_path / "runs").glob("*/config.yaml")) if (tmp_path / "runs").exists() else True


def test_missing_local_corpus_is_one_line(tmp_path):
    proc = run_train("data=local", f"data.path={tmp_path / 'nowhere'}", f"runs_dir={tmp_path / 'runs'}")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"posbench: error: data.path {str(tmp_path / 'nowhere')!r} does not exist; give an existing text file or folder"


def test_checkpoint_that_is_not_ours_is_refused_without_unpickling(tmp_path):
    import collections

    import torch

    from posbench.results import load_checkpoint

    torch.save({"weights": torch.zeros(2)}, tmp_path / "checkpoint.pt")
    with pytest.raises(PosbenchError, match="not a posbench checkpoint"):
        load_checkpoint(tmp_path)
    # an arbitrary pickled object: weights_only refuses to build it
    torch.save(collections.Counter(a=1), tmp_path / "checkpoint.pt")
    with pytest.raises(PosbenchError, match="not a posbench checkpoint"):
        load_checkpoint(tmp_path)


def test_report_skips_a_corrupt_metrics_file_with_a_warning(tmp_path):
    from posbench.results import load_runs

    good = {"status": "completed", "run_id": "a", "encoding": "nope", "model": "tiny", "train_len": 8, "seed": 0,
            "evaluations": [{"variant": "nope", "protocol": "nonoverlapping", "length": 8, "multiple": 1.0, "ppl": 3.0}]}
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "metrics.json").write_text(__import__("json").dumps(good))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "metrics.json").write_text('{"status": "compl')  # torn write from another tool
    with pytest.warns(UserWarning, match=r"skipping unreadable .*b/metrics.json"):
        runs, evals = load_runs(tmp_path)
    assert list(runs["run_id"]) == ["a"] and len(evals) == 1
