"""The decision guide report section (posbench/report/sections/decision_guide.py): every RoPE method,
factor and fine-tuning step count at 1x and at each target, with intervals, and a best choice named
only where every Holm-corrected comparison with it is significant."""

import copy
import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from posbench.report.pipeline import build_report
from posbench.report.sections.decision_guide import guide_frame, target_sentence


def evals_frame(rows):
    """rows: (variant, seed, length, ppl) of RoPE at train_len 16."""
    return pd.DataFrame([{"encoding": "rope", "model": "tiny", "train_len": 16, "variant": v, "seed": s, "length": L,
                          "ppl": p, "protocol": "nonoverlapping"} for v, s, L, p in rows])


def test_the_guide_table_and_its_verdicts():
    rows = []
    for seed, (jitter, other) in enumerate(((0.0, 0.1), (0.1, -0.1), (-0.1, 0.0))):
        rows += [("rope", seed, 16, 5 + jitter), ("rope", seed, 64, 40 + jitter),
                 ("rope+yarn@4x", seed, 16, 5.2 + jitter), ("rope+yarn@4x", seed, 64, 9 + jitter),
                 ("rope+rerope", seed, 16, 5 + other), ("rope+rerope", seed, 64, 8.9 + other),
                 ("rope+yarn@4x+ft0", seed, 16, 5.2 + jitter), ("rope+yarn@4x+ft0", seed, 64, 9 + jitter),
                 ("rope+yarn@4x+ft100", seed, 16, 5.1 + jitter), ("rope+yarn@4x+ft100", seed, 64, 6 + jitter),
                 ("rope", seed, 32, 6 + jitter), ("rope+pose@2x+ft100", seed, 32, 7 + jitter),  # 2x: its own table ...
                 ("rope+pose@2x+ft100", seed, 64, 7.5 + jitter),  # ... and at the longer target 4x too
                 ("rope+temp0.1", seed, 64, 30 + jitter)]  # not a RoPE extension method: left out
    frame = guide_frame(evals_frame(rows))
    four = frame[frame["target"] == "4x"]
    assert list(four["row"]) == ["rope+yarn@4x+ft100", "rope+pose@2x+ft100", "rope+rerope", "rope+yarn@4x",
                                 "rope+yarn@4x+ft0", "rope"]
    ft = four.iloc[0]
    assert (ft["method"], ft["factor"], ft["steps"], ft["seeds"]) == ("yarn", "4x", 100, 3)
    # geometric means over seeds (exp of the mean log-perplexity)
    assert ft["ppl_target"] == pytest.approx(6.0, rel=1e-3) and ft["ppl_1x"] == pytest.approx(5.1, rel=1e-3)
    assert ft["ppl_target_lo"] < 6.0 < ft["ppl_target_hi"] and ft["interval"] == "seeds only"  # no per-document losses
    assert four.iloc[2][["method", "factor", "steps"]].tolist() == ["rerope", "", "zero-shot"]
    assert four.iloc[1][["method", "factor", "steps"]].tolist() == ["pose", "2x", 100]
    assert set(frame["target"]) == {"2x", "4x"} and "rope+temp0.1" not in set(frame["row"])
    longer = guide_frame(evals_frame(rows + [(v, s, 256, 50.0) for v in ("rope", "rope+rerope") for s in range(3)]))
    assert list(dict.fromkeys(longer["target"])) == ["2x", "4x", "16x"]  # by length, not as strings
    assert math.isnan(ft["p_holm"]) and (four["p_holm"].iloc[1:] < 0.05).all()
    assert target_sentence(four).startswith("best choice: **rope+yarn@4x+ft100** (6.00 [")
    without = guide_frame(evals_frame([r for r in rows if r[0] not in ("rope+yarn@4x+ft100", "rope+pose@2x+ft100")]))
    tied = target_sentence(without[without["target"] == "4x"])  # rerope against YaRN: 8.9 vs 9.0, seed differences (0, -0.3, 0)
    assert tied.startswith("no significant difference between rope+rerope") and "rope+yarn@4x (p = " in tied
    one_seed = guide_frame(evals_frame([r for r in rows if r[1] == 0]))
    # rows without run ids are other weights: one seed cannot resolve them
    assert "not resolvable with 1 seed" in target_sentence(one_seed[one_seed["target"] == "4x"])


def test_controls_join_every_target_and_a_lone_row_makes_no_table():
    """The control (continued at train_len, factor 1) is no target of its own: it is compared at the
    fine-tunes' target; a panel with one row (a model trained at the target) gives no table."""
    rows = []
    for seed, jitter in enumerate((0.0, 0.1, -0.1)):
        rows += [("rope", seed, 16, 5 + jitter), ("rope", seed, 64, 40 + jitter),
                 ("rope@1x+ft100", seed, 16, 4.8 + jitter), ("rope@1x+ft100", seed, 64, 30 + jitter),
                 ("rope+plain@4x+ft100", seed, 16, 5.0 + jitter), ("rope+plain@4x+ft100", seed, 64, 6 + jitter)]
    evals = evals_frame(rows)
    alone = evals_frame([("rope", s, 64, 6.0 + j) for s, j in enumerate((0.0, 0.1, -0.1))]).assign(train_len=64)
    frame = guide_frame(pd.concat([evals, alone]))
    assert set(frame["target"]) == {"4x"} and set(frame["train_len"]) == {16}
    methods = dict(zip(frame["row"], frame["method"]))
    assert methods["rope@1x+ft100"] == "control: continued at train_len" and methods["rope+plain@4x+ft100"] == "plain (no scaling)"


def test_one_seed_gets_an_interval_over_text_from_per_document_losses():
    """With ``doc_nats`` and the token set's document sizes, the interval covers the text: one seed
    has one, and a zero-shot row of the same weights (the same run) that is worse on every document
    is separated from the best by the test paired over documents."""
    rng = np.random.default_rng(0)
    doc_tokens = np.full(40, 100)
    base = rng.normal(1.6, 0.2, size=40)  # per-token loss of each document
    rows = []
    for variant, add_1x, add_4x in (("rope", 0.0, 0.8), ("rope+yarn@4x", 0.02, 0.1), ("rope+ntk@4x", 0.02, 0.3)):
        for L, add in ((16, add_1x), (64, add_4x)):
            nats = (base + add + rng.normal(0, 0.01, size=40)) * doc_tokens
            rows.append({"encoding": "rope", "model": "tiny", "train_len": 16, "variant": variant, "seed": 0, "run_id": "r0",
                         "length": L, "protocol": "nonoverlapping", "token_set": "t", "doc_nats": list(nats),
                         "ppl": float(np.exp(nats.sum() / doc_tokens.sum()))})
    frame = guide_frame(pd.DataFrame(rows), {"t": {"doc_tokens": list(doc_tokens)}}, replicates=500)
    assert (frame["interval"] == "text only (1 seed)").all() and (frame["seeds"] == 1).all()  # not "text and seeds"
    assert set(frame["test"]) - {""} == {"paired over documents (same weights)"}
    assert (frame["ppl_target_lo"] < frame["ppl_target"]).all() and (frame["ppl_target"] < frame["ppl_target_hi"]).all()
    assert frame.iloc[0]["row"] == "rope+yarn@4x" and target_sentence(frame).startswith("best choice: **rope+yarn@4x**")


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


def test_a_target_no_run_was_scored_at_and_a_missing_seed_break_nothing():
    """An extension target beyond the evaluated lengths gives no table (no error); a row missing a
    seed at the target has no mean and is never named best."""
    rows = []
    for seed, jitter in enumerate((0.0, 0.1, -0.1)):
        rows += [("rope", seed, 16, 5 + jitter), ("rope", seed, 32, 12 + jitter),
                 ("rope+rerope", seed, 16, 5 + jitter), ("rope+rerope", seed, 32, 8 + jitter),
                 ("rope+yarn@8x+ft10", seed, 16, 5 + jitter),  # tuned for 128: never scored there
                 ("rope+yarn@2x", seed, 16, 5 + jitter)]
        if seed < 2:
            rows.append(("rope+yarn@2x", seed, 32, 2 + jitter))  # lowest, but one seed short
    frame = guide_frame(evals_frame(rows))
    assert set(frame["target"]) == {"2x"}
    two = frame[frame["target"] == "2x"]
    assert target_sentence(two).startswith("best choice: **rope+rerope**") or "rope+rerope (" in target_sentence(two)
    assert two.set_index("row").loc["rope+yarn@2x", "ppl_target"] != two["ppl_target"].min()


def test_evaluation_windows_are_controls_not_extension_methods():
    """A row its record marks windowed (+swaL, +bca: a control that reads train_len keys) is no
    choice in the guide, however low its perplexity at the target."""
    rows = [(v, s, L, p + 0.1 * s) for s in range(3)
            for v, L, p in (("rope", 16, 5.0), ("rope", 64, 40.0), ("rope+yarn@4x", 16, 5.2), ("rope+yarn@4x", 64, 9.0),
                            ("rope+swaL", 16, 5.0), ("rope+swaL", 64, 4.6))]
    evals = evals_frame(rows)
    evals["windowed"] = evals["variant"] == "rope+swaL"
    frame = guide_frame(evals)
    assert list(frame["row"]) == ["rope+yarn@4x", "rope"]
