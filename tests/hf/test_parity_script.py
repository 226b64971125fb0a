"""scripts/hf_parity.py on two made-up run folders: identical losses compare to 0, a perturbed token and
mean loss show as their difference, and runs of other tokens are refused in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_script

TOKEN_SET = "abc:segments[32, 1 per doc, from 32]"


@pytest.fixture(scope="module")
def script():
    return load_script("hf_parity")


def run_folder(path: Path, family: str, losses: np.ndarray, token_set: str = TOKEN_SET) -> Path:
    """A run directory with one row at L=8 (nonoverlapping): its record, per-token and per-position losses."""
    path.mkdir(parents=True)
    record = {"variant": f"{family}+yarn@16x", "protocol": "nonoverlapping", "length": 8, "multiple": 1.0,
              "token_set": token_set, "tokens_scored": losses.size, "loss": float(losses.mean()),
              "ppl": math.exp(losses.mean())}
    (path / "metrics.json").write_text(json.dumps({"encoding": family, "evaluations": [record]}))
    key = f"{family}+yarn@16x/nonoverlapping/L8"
    np.savez(path / "token_losses.npz", **{key: losses.astype(np.float16),
                                          "nonoverlapping/L8/doc": np.repeat(np.arange(2), 8).astype(np.int32),
                                          "nonoverlapping/L8/position": np.tile(np.arange(8), 2).astype(np.int32)})
    np.savez(path / "per_position.npz", **{key: losses.reshape(2, 8).mean(0).astype(np.float32)})
    return path


def test_identical_losses_compare_to_zero_and_a_perturbed_token_to_its_difference(tmp_path, script):
    losses = np.linspace(0.5, 3.0, 16)
    native = run_folder(tmp_path / "native", "rope", losses)
    same = run_folder(tmp_path / "same", "gpt_neox", losses)
    bumped = losses.copy()
    bumped[5] += 0.25
    other = run_folder(tmp_path / "other", "gpt_neox", bumped)

    (row,) = script.compare("m", "float32", native, same)
    assert row["row"] == "rope+yarn@16x"  # matched across the two families' names
    assert row["max_dtoken"] == 0 and row["dloss"] == 0 and row["max_dposition"] == 0 and row["tokens_differing"] == 0

    (row,) = script.compare("m", "float32", native, other)
    assert row["max_dtoken"] == pytest.approx(0.25, abs=2e-3)  # float16 storage
    assert row["tokens_differing"] == pytest.approx(1 / 16)
    assert row["dloss"] == pytest.approx(0.25 / 16)
    assert row["dppl_rel"] == pytest.approx(math.exp(0.25 / 16) - 1)
    assert row["max_dposition"] == pytest.approx(0.25 / 2, abs=1e-6)  # one of the two windows at position 5

    out = tmp_path / "out"
    assert script.main(["--pair", "m", "float32", str(native), str(other), "--out", str(out)]) == 0
    table = pd.read_csv(out / "parity.csv")
    assert list(table.columns) == script.COLUMNS and len(table) == 1
    assert "| rope+yarn@16x | 2.5e-01 / +1.6e-02 |" in (out / "parity.md").read_text()


def test_runs_of_other_tokens_are_refused_in_one_line(tmp_path, script, capsys):
    losses = np.ones(16)
    native = run_folder(tmp_path / "native", "rope", losses)
    hf = run_folder(tmp_path / "hf", "gpt_neox", losses, token_set="def:segments[32, 1 per doc, from 0]")
    assert script.main(["--pair", "m", "float32", str(native), str(hf), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "other tokens scored" in err
    assert not (tmp_path / "out").exists()
