"""scripts/map_gpu.sh: the map's base stages on a lent GPU run end to end on CPU at a tiny
size, so that the one GPU call cannot fail on a typo: the grid, its extension where a choice lies on the
edge, the line at the rates the grid chose, the machine control beside the grid, every run in fp32,
and the ended runs packed without weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from posbench.store.records import unpack

ROOT = Path(__file__).parents[2]


@pytest.mark.slow  # ~1.5 min on 2 idle cores (44 tiny base runs and more), far longer beside other work; run it before a GPU call (docs/testing.md)
def test_the_base_stages_choose_rates_on_the_grid_and_train_the_line_at_them(tmp_path, text_corpus, cache_dir):
    size = (f"train_len=16 train.batch_size=4 train.budgets=[6] train.warmup_steps=1 eval.scored_tokens=256 "
            f"data=local data.path={text_corpus}")
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1", "DEVICE": "cpu", "WHEELS": "",
           "CORPUS_ARCHIVE": "", "JOBS": "2", "GRID_S": "1200", "LINE_S": "900", "CONTROL_GROUPS": "0.002:nope", "SIZE_EXTRA": size}
    out = tmp_path / "out"
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "map_gpu.sh"), str(out), str(tmp_path / "runs")],
                          capture_output=True, text=True, env=env, timeout=2400)
    log = (out / "map_gpu.log").read_text()
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:] + log
    assert "done: grid 0, control 0, line 0" in log
    with tarfile.open(out / "kept.tgz") as tar:
        tar.extractall(tmp_path / "kept", filter="data")
    kept = tmp_path / "kept" / "kept"
    assert not list(kept.rglob("*.pt"))
    tuning = pd.read_csv(kept / "map_lr" / "report_base" / "tuning.csv")
    chosen = dict(zip(tuning.loc[tuning["chosen"], "encoding"], tuning.loc[tuning["chosen"], "lr"]))
    for encoding, g in tuning.groupby("encoding"):  # the line's rates never lie on the grid's edge
        assert min(g["lr"]) < chosen[encoding] < max(g["lr"])
    for folder in ("map", "control"):  # the records files, unpacked as a study that continues would
        unpack(kept / f"{folder}.parquet", kept / folder)
    line = [yaml.safe_load((d / "config.yaml").read_text()) for d in (kept / "map").iterdir() if d.is_dir() and not d.name.startswith(".")]
    assert sorted({(c["encoding"]["name"], c["seed"]) for c in line}) == sorted((e, s) for e in chosen for s in (0, 1))
    assert all(c["model"]["name"] == "base" and c["precision"] == "fp32" for c in line)
    assert all(c["train"]["lr"] == pytest.approx(chosen[c["encoding"]["name"]]) for c in line)
    control = [json.loads(p.read_text()) for p in (kept / "control").glob("*/metrics.json")]
    assert [(m["encoding"], m["model"], m["status"]) for m in control] == [("nope", "small", "completed")]
