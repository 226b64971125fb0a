"""scripts/schedule_comparison.py: cosine against WSD at one budget, from a report of cosine runs and a
budget sweep's report, paired by seed and scored document: a difference the seeds and text support
is resolved, none is invented; folders without that budget are refused in one line."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).parents[2]
DOCS, TOKENS = 12, 16
SET = f"abc:segments[{TOKENS}, 1 per doc, from 0]"


def records(variant, level, schedule_gap, budget=None, windowed=False, noise=7):
    """Three seeds x 1x, 16x: log-perplexity ``level`` (+ ``schedule_gap``) + a seed effect shared by both
    schedules + a document effect shared by every record (the same text), + a little noise."""
    rng, docs = np.random.default_rng(noise), np.random.default_rng(1).normal(0, 0.3, DOCS)
    out = []
    for seed in range(3):
        for m, extra in ((1, 0.0), (16, 0.5)):
            log_ppl = level + schedule_gap + extra + 0.05 * (seed - 1) + docs + rng.normal(0, 0.01, DOCS)
            nats = (log_ppl * TOKENS).tolist()
            out.append({"run_id": f"{variant}_s{seed}_{noise}", "encoding": variant.split("+")[0], "model": "small",
                        "train_len": 64, "seed": seed, "status": "completed", "variant": variant, "protocol": "nonoverlapping",
                        "length": 64 * m, "multiple": float(m), "ppl": math.exp(sum(nats) / (DOCS * TOKENS)),
                        "token_set": SET, "doc_nats": str(nats), "windowed": windowed,
                        **({"budget_steps": budget} if budget else {})})
    return out


def folders(tmp_path, steps=1200):
    cosine, budget = tmp_path / "cosine", tmp_path / "budget"
    cosine.mkdir(), budget.mkdir()
    pd.DataFrame(records("rope", 1.8, 0.1, steps) + records("alibi", 1.9, 0.0, steps)
                 + records("alibi+swaL", 1.9, 0.0, steps, windowed=True)).to_csv(cosine / "evaluations.csv", index=False)
    # the budget sweep's other budget and its window control differ, so that reading either would show
    pd.DataFrame(records("rope", 1.8, 0.0, 1200, noise=8) + records("alibi", 1.9, 0.0, 1200, noise=8)
                 + records("rope", 1.2, 0.0, 2400, noise=9) + records("alibi+swaL", 1.2, 0.0, 1200, windowed=True, noise=8)
                 ).to_csv(budget / "evaluations.csv", index=False)
    return cosine, budget


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "schedule_comparison.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_paired_by_seed_and_document_a_schedule_s_difference_is_resolved_and_none_is_invented(tmp_path):
    proc = run(*folders(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
             for line in proc.stdout.splitlines()[2:]}
    assert set(lines) == {"alibi", "rope"}  # no window control, no record of the budget of 2400 steps
    rope, alibi = lines["rope"], lines["alibi"]
    ratio, lo, hi = (float(x) for x in rope[3].replace("[", ",").rstrip("]").split(","))
    assert rope[0] == "3" and abs(ratio - math.exp(0.1)) < 0.01  # cosine 10.5% above wsd at 1x
    assert 1 < lo < ratio < hi and rope[4] == "< 0.001"  # resolved: the seeds' shared effect cancels in the pairs
    ratio, lo, hi = (float(x) for x in rope[8].replace("[", ",").rstrip("]").split(","))
    assert lo < 1 < hi and float(rope[9]) > 0.05  # the same gap at 1x and 16x: the ratios to 1x agree
    ratio, lo, hi = (float(x) for x in alibi[3].replace("[", ",").rstrip("]").split(","))
    assert lo < 1 < hi and float(alibi[4]) > 0.05 and float(alibi[9]) > 0.05  # no difference invented, at 1x or 16x
    # Holm over the two rows, per question: the smaller p doubled, the larger kept (or raised to the first)
    small, large = sorted([(float(rope[9]), float(rope[10])), (float(alibi[9]), float(alibi[10]))])
    assert math.isclose(small[1], min(1.0, 2 * small[0]), rel_tol=0.05) and large[1] == max(large[0], small[1])


def test_folders_without_the_budget_are_refused_in_one_line(tmp_path):
    cosine, budget = folders(tmp_path, steps=600)
    proc = run(cosine, budget)
    assert proc.returncode == 1 and proc.stderr.strip().splitlines() == [
        f"schedule_comparison: {cosine} holds runs of [600] steps, not only 1200"]
    proc = run(cosine, budget, "--steps", "600")
    assert proc.returncode == 1 and "has no budget of 600 steps; it has [1200, 2400]" in proc.stderr


def test_records_on_other_documents_are_not_paired(tmp_path):
    cosine, budget = folders(tmp_path)
    evals = pd.read_csv(cosine / "evaluations.csv")
    evals.assign(token_set=SET.replace("abc", "other")).to_csv(cosine / "evaluations.csv", index=False)
    proc = run(cosine, budget)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "must be scored on the same documents to be paired" in proc.stderr
