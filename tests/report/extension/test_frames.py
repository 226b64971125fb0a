"""posbench/report/extension/frames.py: fine-tunes compared with a model trained at the target and with the
control, paired by seed."""

import re

import pandas as pd
import pytest

from posbench.jobs.train import run
from posbench.store.rundir import RunDir
from tests.helpers import ext

BASE = ["model=tiny", "train=smoke", "train_len=16", "eval.protocols=[nonoverlapping]", "eval.multiples=[1,4]",
        "eval.scored_tokens=256", "data=local"]


def test_the_report_compares_fine_tunes_with_a_model_trained_at_the_target_and_the_control(compose, tmp_path, text_corpus):
    """The extension table has the control's row (the parent continued at train_len for the same
    steps, scored at the target) and each method's gain net of it, paired by seed."""
    from posbench.report.pipeline import build_report

    runs = tmp_path / "runs"
    # one token set for train_len 16 and 64: the same first scored target and segment length
    shared = [*BASE, "eval.first_scored=256", "eval.segment=256", f"data.path={text_corpus}", f"runs_dir={runs}"]
    for steps in (0, 4):
        run(compose("encoding=alibi", *shared, *ext(f"extend.steps={steps}")))
        run(compose("encoding=alibi", *shared, "extend.length=16", f"extend.steps={steps}"))  # the control
    scratch = RunDir(run(compose("encoding=alibi", *shared, "train_len=64", "train.batch_size=2"))).read_metrics()
    build_report(runs, tmp_path / "rep")
    table = pd.read_csv(tmp_path / "rep" / "table.csv")
    assert set(table["variant"]) == {"alibi", "alibi@4x+ft0", "alibi@4x+ft4", "alibi@1x+ft0", "alibi@1x+ft4"}
    ext_table = pd.read_csv(tmp_path / "rep" / "extension.csv")
    assert len(ext_table) == 2
    control = ext_table[ext_table["method"] == "continued at train_len"].iloc[0]
    at_target = lambda v: table.loc[(table["variant"] == v) & (table["train_len"] == 16), "4x"].item()  # noqa: E731
    assert control["target"] == 64 and control["ft 4"] == pytest.approx(at_target("alibi@1x+ft4"))
    row = ext_table[ext_table["method"] == "plain"].iloc[0]
    net = 100 * (1 - at_target("alibi@4x+ft4") / at_target("alibi@1x+ft4"))  # one seed: an interval over text only
    lo, hi = (float(x) for x in re.fullmatch(re.escape(f"{net:+.1f}%") + r" \[([-+.\d]+), ([-+.\d]+)\]", row["net of control ft 4"]).groups())
    assert lo <= net + 0.05 and net - 0.05 <= hi
    assert row["ft 4_lo"] <= row["ft 4"] * (1 + 1e-6) and row["ft 4"] <= row["ft 4_hi"] * (1 + 1e-6)  # (one document here: a point)
    at_target = lambda v: table.loc[(table["variant"] == v) & (table["train_len"] == 16), "4x"].item()  # noqa: E731
    assert row["method"] == "plain" and row["target"] == 64
    assert row["ft 0"] == pytest.approx(at_target("alibi@4x+ft0"))
    assert row["ft 4"] == pytest.approx(at_target("alibi@4x+ft4"))
    scratch_1x = next(r["ppl"] for r in scratch["evaluations"] if r["length"] == 64)
    assert row["from scratch"] == pytest.approx(scratch_1x)  # its 1x, on the same tokens
    needed = [s for s in (0, 4) if row[f"ft {s}"] <= 1.05 * scratch_1x]
    assert str(row["steps to within 5%"]) == (str(needed[0]) if needed else "> 4")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Context extension by fine-tuning" in md and (tmp_path / "rep" / "extension.png").exists()


def test_extension_records_are_read_at_their_target_with_the_control_beside_them():
    """extension_frame: one row per extension record at its target length (rows
    <encoding>[+<method>]@<s>x+ft<steps>), plus the control (the parent continued at train_len, @1x)
    at the targets the others have; plain rows and other lengths are not extension records."""
    import pandas as pd

    from posbench.report.extension.frames import CONTROL, extension_frame

    def rec(variant, length, ppl, seed=0):
        return {"variant": variant, "model": "tiny", "train_len": 16, "length": length, "seed": seed, "token_set": "t",
                "ppl": ppl}

    evals = pd.DataFrame([rec("rope+yarn@4x+ft10", 64, 5.0), rec("rope+yarn@4x+ft10", 16, 4.0),
                          rec("rope@1x+ft10", 64, 7.0), rec("rope@1x+ft10", 128, 9.0), rec("rope", 64, 8.0)])
    frame = extension_frame(evals)
    assert frame[["method", "target", "steps", "ppl"]].values.tolist() == [["yarn", 64, 10, 5.0], [CONTROL, 64, 10, 7.0]]
    assert set(frame["encoding"]) == {"rope"}
