"""Sweeps through the scale-out launchers: joblib (local parallel) and submitit (the SLURM path,
run locally). Both must produce the same completed runs as the sequential launcher."""

import json
import os
import subprocess
import sys

import pytest

# threads=1 everywhere: float sums split over a different number of threads round differently,
# so bit-identity holds at equal thread counts (joblib's workers run one thread each anyway)
COMMON = ["threads=1", "model=tiny", "train=smoke", "train.steps=6", "train_len=16", "eval.multiples=[1,2]", "eval.scored_tokens=256",
          "data=local"]


def sweep(tmp_path, corpus, launcher):
    runs = tmp_path / launcher
    cmd = [sys.executable, "-m", "posbench.cli.train", "-m", f"hydra/launcher={launcher}", "encoding=nope,alibi",
           *COMMON, f"data.path={corpus}", f"runs_dir={runs}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "POSBENCH_JOBS": "2"}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {json.loads(p.read_text())["encoding"]: json.loads(p.read_text()) for p in runs.glob("*/metrics.json")}


@pytest.mark.parametrize("launcher", ["local_parallel", pytest.param("local_submitit", marks=pytest.mark.slow)])
def test_parallel_launchers_give_the_sequential_results(tmp_path, text_corpus, cache_dir, launcher):
    sequential = sweep(tmp_path, text_corpus, "basic")
    parallel = sweep(tmp_path, text_corpus, launcher)
    assert sorted(parallel) == ["alibi", "nope"]
    for enc, m in parallel.items():
        assert m["status"] == "completed"
        assert m["run_id"] == sequential[enc]["run_id"]
        assert m["evaluations"] == sequential[enc]["evaluations"]  # same config and seed, same bits on CPU
