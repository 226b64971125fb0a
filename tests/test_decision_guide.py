"""The decision guide report section (posbench/report/sections/decision_guide.py): every RoPE method,
factor and fine-tuning step count at 1x and at each target, with intervals, and a verdict only where
intervals separate the best."""

import copy
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from posbench.report.pipeline import build_report
from posbench.report.sections.decision_guide import guide_frame, verdict


def evals_frame(rows):
    """rows: (variant, seed, length, ppl) of RoPE at train_len 16."""
    return pd.DataFrame([{"encoding": "rope", "model": "tiny", "train_len": 16, "variant": v, "seed": s, "length": L,
                          "ppl": p, "protocol": "nonoverlapping"} for v, s, L, p in rows])


def test_the_guide_table_and_its_verdicts():
    rows = []
    for seed, jitter in enumerate((0.0, 0.1, -0.1)):
        rows += [("rope", seed, 16, 5 + jitter), ("rope", seed, 64, 40 + jitter),
                 ("rope+yarn@4x", seed, 16, 5.2 + jitter), ("rope+yarn@4x", seed, 64, 9 + jitter),
                 ("rope+rerope", seed, 16, 5 + jitter), ("rope+rerope", seed, 64, 8.9 + jitter),
                 ("rope+yarn@4x+ft0", seed, 16, 5.2 + jitter), ("rope+yarn@4x+ft0", seed, 64, 9 + jitter),
                 ("rope+yarn@4x+ft100", seed, 16, 5.1 + jitter), ("rope+yarn@4x+ft100", seed, 64, 6 + jitter),
                 ("rope+pose@2x+ft100", seed, 32, 7 + jitter),  # another target: its own table
                 ("rope+temp0.1", seed, 64, 30 + jitter)]  # not a RoPE extension method: left out
    frame = guide_frame(evals_frame(rows))
    four = frame[frame["target"] == "4x"]
    assert list(four["row"]) == ["rope+yarn@4x+ft100", "rope+rerope", "rope+yarn@4x", "rope+yarn@4x+ft0", "rope"]
    ft = four.iloc[0]
    assert (ft["method"], ft["factor"], ft["steps"], ft["seeds"]) == ("yarn", "4x", 100, 3)
    assert ft["ppl_target"] == pytest.approx(6.0) and ft["ppl_target_ci95"] > 0 and ft["ppl_1x"] == pytest.approx(5.1)
    assert four.iloc[1][["method", "factor", "steps"]].tolist() == ["rerope", "", "zero-shot"]
    assert set(frame["target"]) == {"2x", "4x"} and "rope+temp0.1" not in set(frame["row"])
    assert verdict(four).startswith("best choice: **rope+yarn@4x+ft100** (6.00 ± ")
    tied = verdict(four.iloc[1:])  # rerope against YaRN: 8.9 vs 9.0 with the same spread
    assert tied.startswith("no significant difference between rope+rerope") and "rope+yarn@4x" in tied
    one_seed = guide_frame(evals_frame([r for r in rows if r[1] == 0]))
    assert "one seed, so no interval and no verdict" in verdict(one_seed[one_seed["target"] == "4x"])


def test_the_report_shows_the_guide_from_run_directories(sweep, tmp_path):
    """Synthetic run directories: the shared sweep's RoPE runs (2 seeds, train_len 16, multiples 1, 2,
    4) given records of three more RoPE rows, as evaluation variants and fine-tunes would write them."""
    runs, _, _ = sweep
    root = tmp_path / "runs"
    for run in runs.glob("rope_*"):
        shutil.copytree(run, root / run.name)
    for path in root.glob("*/metrics.json"):
        m = json.loads(path.read_text())
        plain = [r for r in m["evaluations"] if r["variant"] == "rope" and r["protocol"] == "nonoverlapping"]
        for name, scale in (("rope+yarn@4x", 0.5), ("rope+rerope", 0.6), ("rope+yarn@4x+ft100", 0.3)):
            for r in plain:
                new = copy.deepcopy(r)
                new["variant"] = name
                new.pop("row", None)  # read from the name, as for records made before rows were recorded
                new.pop("doc_nats", None)  # the scaled perplexity is not these documents' losses
                new["ppl"] = r["ppl"] * (1 if r["length"] == 16 else scale)
                new["loss"] = float(np.log(new["ppl"]))
                m["evaluations"].append(new)
        path.write_text(json.dumps(m))
    out = tmp_path / "report"
    md = build_report(root, out, protocols=["nonoverlapping"]).read_text()
    assert "## Decision guide: extending a RoPE model" in md and "### tiny, trained at 16, target 4x" in md
    assert "decision_guide.csv" in md
    csv = pd.read_csv(out / "decision_guide.csv")
    assert set(csv["row"]) >= {"rope", "rope+yarn@4x", "rope+rerope", "rope+yarn@4x+ft100"}
    assert (csv["seeds"] == 2).all()
    best = csv[csv["target"] == "4x"].sort_values("ppl_target").iloc[0]
    assert best["row"] == "rope+yarn@4x+ft100"
