"""scripts/gpu_study.sh: the GPU study's one command runs end to end on CPU at a tiny size,
so that the run on a lent GPU (minutes, once) cannot fail on a typo, and a stage cut by its time
limit still leaves what the others wrote."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
TINY = {"DEVICE": "cpu", "WHEELS": "", "CORPUS_ARCHIVE": "", "RUN_TESTS": "0", "JOBS": "1", "MAP_SEEDS": "0",
        "BENCH_ARGS": "--model tiny --train-len 16 --batch 4 --steps 2 --rounds 1 --reference-once --eval-tokens 256",
        "BENCH_ENCODINGS": "nope", "MAP_SIZE": "model=tiny train_len=16 train.batch_size=4",
        "MAP_GROUPS": "0.002:nope 0.004:alibi"}


def run_study(out: Path, corpus: Path, **env) -> subprocess.CompletedProcess:
    extra = f"train.budgets=[6,12] train.warmup_steps=1 eval.scored_tokens=256 data=local data.path={corpus}"
    return subprocess.run(["bash", str(ROOT / "scripts" / "gpu_study.sh"), str(out)], capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1",
                               **TINY, "MAP_EXTRA": extra, **env}, timeout=600)


@pytest.mark.slow  # ~55 s; run before a GPU call (docs/testing.md): the script matters only where a device is lent
def test_the_study_runs_every_stage_and_packs_runs_without_weights(tmp_path, text_corpus, cache_dir):
    proc = run_study(tmp_path / "out", text_corpus)
    out = tmp_path / "out"
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:] + (out / "study.log").read_text()
    assert "done: bench 0, tests 0, map 0, report 0" in (out / "study.log").read_text()
    bench = (out / "bench" / "bench.csv").read_text().splitlines()
    assert [line.split(",")[0] for line in bench[1:]] == ["reference_gpt", "nope"]
    assert "--compile" not in (out / "bench" / "bench.md").read_text()  # (the tiny run trains eager)
    metrics = [json.loads(p.read_text()) for p in (out / "map_runs").glob("*/metrics.json")]
    # two encodings at their two rates, each a trunk with 6- and 12-step branches
    assert sorted((m["encoding"], m["budget"]["steps"]) for m in metrics) == [("alibi", 6), ("alibi", 12), ("nope", 6), ("nope", 12)]
    rates = {m["encoding"]: yaml.safe_load((out / "map_runs" / m["run_id"] / "config.yaml").read_text())["train"]["lr"]
             for m in metrics}
    assert rates == {"nope": 0.002, "alibi": 0.004}
    assert all(m["status"] == "completed" for m in metrics)
    with tarfile.open(out / "map_runs.tgz") as tar:
        names = tar.getnames()
    assert sum(n.endswith("metrics.json") for n in names) == 4 and not any(n.endswith(".pt") for n in names)
    with tarfile.open(out / "map_report.tgz") as tar:
        assert "map_report/table.csv" in tar.getnames()


@pytest.mark.slow  # a second run of the study (~40 s)
def test_a_stage_cut_by_its_limit_leaves_the_rest(tmp_path, text_corpus, cache_dir):
    """The benchmark given 1 s stops (exit 124, said in the log); the map and its report still run."""
    proc = run_study(tmp_path / "out", text_corpus, BENCH_S="1", MAP_GROUPS="0.002:nope")
    log = (tmp_path / "out" / "study.log").read_text()
    assert proc.returncode == 1
    assert "bench: exit 124" in log and "what it finished is kept" in log
    assert "done: bench 124, tests 0, map 0, report 0" in log
    assert (tmp_path / "out" / "map_report" / "table.csv").exists()
