"""The tuned-extenders table (posbench/report/sections/tuned_extenders.py): each tuned row beside its default row, with
the held-out losses of its search and their band."""

import math

import pandas as pd

from posbench.report.sections.tuned_extenders import default_row, tuned_frame, tuned_table


def fit(default_loss, chosen, losses):
    searched = [{"setting": {"alpha": a}, "heldout_loss": v} for a, v in zip([4.0, 1.0, 16.0], losses)]
    return {"tuned": {"scaling": "ntk", "budget": 3, "evaluations": 3, "objective": "loss", "default": {"alpha": 4.0},
                      "default_loss": default_loss, "chosen": {"alpha": chosen}, "chosen_loss": min(losses),
                      "searched": searched}}


def test_default_rows_of_tuned_rows():
    assert default_row("rope+yarn@16x+tuned") == "rope+yarn@16x"
    assert default_row("rope+dynamic_ntk+tuned8-needle") == "rope+dynamic_ntk"
    assert default_row("rope@4x+ft100+ntk@4x+tuned") == "rope@4x+ft100+ntk@4x"


def test_each_tuned_record_is_paired_with_its_default_row_and_averaged_over_runs():
    rows = []
    for run, (d, t) in {"a": (11.0, 10.0), "b": (13.0, 12.0)}.items():
        rows += [{"run_id": run, "variant": "rope+ntk@4x", "protocol": "p", "length": 128, "multiple": 4.0, "ppl": d, "fit": None},
                 {"run_id": run, "variant": "rope+ntk@4x+tuned3", "protocol": "p", "length": 128, "multiple": 4.0, "ppl": t,
                  "fit": fit(2.2, 1.0, [2.2, 2.1, 2.5])},
                 {"run_id": run, "variant": "rope+ntk@4x+tuned3", "protocol": "p", "length": 32, "multiple": 1.0, "ppl": 9.0,
                  "fit": None}]  # nothing searched at train_len: no line
    frame = tuned_frame(pd.DataFrame(rows))
    assert len(frame) == 2 and set(frame["default_ppl"]) == {11.0, 13.0}
    assert (frame["band_lo"] == 2.1).all() and (frame["band_hi"] == 2.5).all() and (frame["chosen"] == "alpha 1").all()
    line = tuned_table(frame).iloc[0].tolist()
    assert line == ["rope+ntk@4x+tuned3", "rope+ntk@4x", "p", "4x", 2, 3, "12.000 -> 11.000", "2.2000 -> 2.1000",
                    "2.1000-2.5000", "alpha 1"]


def test_a_default_row_without_a_score_reads_not_defined():
    rows = [{"run_id": "a", "variant": "rope+longrope@4x", "protocol": "p", "length": 128, "multiple": 4.0, "ppl": None, "fit": None},
            {"run_id": "a", "variant": "rope+longrope@4x+tuned3", "protocol": "p", "length": 128, "multiple": 4.0,
             "ppl": 10.0, "fit": fit(2.2, 1.0, [2.2, 2.1, 2.5])}]
    frame = tuned_frame(pd.DataFrame(rows))
    assert frame["default"].iloc[0] == "rope+longrope@4x" and math.isnan(frame["default_ppl"].iloc[0])
    assert tuned_table(frame)["ppl default -> tuned"].iloc[0] == "n/d -> 10.000"
    assert tuned_frame(pd.DataFrame(rows[:1])).empty and tuned_table(tuned_frame(pd.DataFrame(rows[:1]))).empty
