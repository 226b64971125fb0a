"""What a researcher trips over in the first hour of reports: the verdict's multiple is one
every row has (a 32x evaluation of one seed does not cost every other row its verdict), several
folders and a filter, smoke runs never read as a training budget, "rank" named apart, the headline
by verdict class first, and no absolute path of the machine in a report."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from posbench.cli import report as report_cli
from posbench.core.errors import PosbenchError
from posbench.report.analysis.headline import lm_headline
from posbench.report.analysis.prose import verdict_entry
from posbench.report.analysis.tables import main_table, verdict_multiple
from tests.report.analysis.test_tables import fake_evals


def _with_longer_seed(evals: pd.DataFrame, variant: str, multiple: float, ppl: float) -> pd.DataFrame:
    """``evals`` and one record of one seed of ``variant`` at a longer ``multiple``."""
    one = evals[(evals["variant"] == variant) & (evals["seed"] == 0) & (evals["multiple"] == 2.0)]
    return pd.concat([evals, one.assign(multiple=multiple, length=int(8 * multiple), ppl=ppl)], ignore_index=True)


def test_one_seed_evaluated_longer_keeps_every_rows_verdict_at_the_multiple_all_share():
    evals = fake_evals({"flat": [[5.0, 5.05], [5.2, 5.2], [4.9, 4.95]], "bad": [[6.0, 12.0], [6.3, 13.0], [5.9, 11.0]]})
    before = main_table(evals, 0.05).set_index("variant")
    after = main_table(_with_longer_seed(evals, "flat", 4.0, 5.1), 0.05).set_index("variant")
    assert "2x/1x" in after and "4x/1x" not in after  # the verdict stays at the multiple every row has
    assert after.loc["flat", "verdict"] == "flat" and after.loc["bad", "verdict"] == "broken"
    for col in ("2x/1x", "2x/1x_lo", "2x/1x_hi", "mean_log_ppl", "rank_mean_log_ppl", "rank_1x", "extrapolation_len"):
        assert after[col].tolist() == pytest.approx(before[col].tolist())  # unchanged by the extra record
    assert "4x" in after and after.loc["flat", "4x_note"] == "n/e"  # an extra column, for the rows that have it


def test_the_verdict_multiple_can_be_chosen_and_an_unevaluated_one_is_named():
    evals = fake_evals({"a": [[5.0, 5.1], [5.1, 5.2]], "b": [[5.0, 9.0], [5.1, 9.5]]})
    assert verdict_multiple(evals) == 2.0 and verdict_multiple(evals, 1.0) == 1.0
    with pytest.raises(PosbenchError, match=r"--multiple 32 was not evaluated; the multiples there are: 1x, 2x"):
        verdict_multiple(evals, 32)
    assert "2x/1x" not in main_table(evals, 0.05, multiple=1.0)  # at 1x: no ratio to read


def _table(rows) -> pd.DataFrame:
    return pd.DataFrame([{"protocol": "nonoverlapping", "variant": v, "model": "small", "train_len": 64, "windowed": False,
                          "1x": 6.5, "1x_lo": 6.0, "1x_hi": 7.1, "16x": 6.4, "16x_note": "", "16x/1x": ratio,
                          "16x/1x_lo": ratio - 0.1, "16x/1x_hi": ratio + 0.1, "label": label, "verdict": label,
                          "rank_mean_log_ppl": rank, "rank_1x": rank} for v, ratio, label, rank in rows])


def test_the_headline_sorts_by_verdict_class_then_rank_and_names_which_rank():
    table = _table([("cope+logn", 1.10, "undecided", 1), ("rope", 2.4, "broken", 2), ("alibi", 0.96, "flat", 3),
                    ("fire", 1.2, "mild", 2)])
    shown, _, _ = lm_headline(table, pd.DataFrame())
    assert list(shown["encoding"]) == ["alibi", "fire", "cope+logn", "rope"]
    assert "rank over lengths" in shown and "rank" not in shown
    assert ", rank at 1x 3/4" in verdict_entry(table.iloc[2], "16x/1x", 4)


def _report(*argv: str) -> None:
    report_cli.main([str(a) for a in argv])


def _refused(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as e:
        _report(*argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    return err


def test_several_folders_are_joined_and_filtered_and_no_absolute_path_is_written(runs, tmp_path, capsys):
    other = tmp_path / "wb"
    other.mkdir()
    for d in [p.parent for p in runs.rglob("metrics.json") if p.parent.name.startswith(("rope_", "alibi_"))]:
        shutil.move(str(d), str(other / d.name))
    out = tmp_path / "rep"
    _report(runs, other, "--out", out, "--protocols", "nonoverlapping")
    md = (out / "report.md").read_text()
    intro = md.split("\n\n")[1]
    assert intro.startswith("5 completed runs from `../runs` and `../wb`")  # named relative to the report's folder
    assert str(tmp_path) not in md and "`alibi`" in md and "`nope`" in md
    _report(runs, other, "--out", out, "--protocols", "nonoverlapping", "--only", "rope_*")
    md = (out / "report.md").read_text()
    assert "`rope`" in md and "`alibi`" not in md and "--only rope_*" in md
    _report(runs, other, "--out", out, "--protocols", "nonoverlapping", "--where", "encoding.name=alibi")
    assert "`rope`" not in (out / "report.md").read_text()
    err = _refused(capsys, runs, other, "--out", out, "--where", "encoding.name=nothing")
    assert "no run below" in err and "--where encoding.name=nothing" in err
    err = _refused(capsys, runs, "--out", out, "--multiple", "32")
    assert "--multiple 32 was not evaluated; the multiples there are: 1x, 2x, 4x" in err


def test_a_run_id_found_twice_with_different_records_is_one_error(runs, tmp_path, capsys):
    twin = tmp_path / "twin"
    first = next(p.parent for p in runs.rglob("metrics.json"))
    shutil.copytree(first, twin / first.name)
    _report(runs, twin, "--out", tmp_path / "same")  # the same run twice: read once
    m = json.loads((twin / first.name / "metrics.json").read_text())
    m["train_wall_s"] = (m.get("train_wall_s") or 0) + 1
    (twin / first.name / "metrics.json").write_text(json.dumps(m))
    err = _refused(capsys, runs, twin, "--out", tmp_path / "rep")
    assert f"run id {m['run_id']} is in" in err and "different records" in err


def _copy_with(runs, tmp_path, prefix: str, key: str, value) -> Path:
    """A copy of one run of ``prefix`` (another run id) with ``encoding.<key>`` set to ``value``."""
    other = tmp_path / "other"
    src = next(p.parent for p in runs.rglob("metrics.json") if p.parent.name.startswith(prefix))
    dst = other / (src.name + "b")
    shutil.copytree(src, dst)
    cfg = yaml.safe_load((dst / "config.yaml").read_text())
    cfg["encoding"][key] = value
    (dst / "config.yaml").write_text(yaml.safe_dump(cfg))
    m = json.loads((dst / "metrics.json").read_text())
    m["run_id"] = m["run_id"] + "b"
    (dst / "metrics.json").write_text(json.dumps(m))
    return other


def test_runs_of_one_row_with_different_encoding_settings_are_refused_not_pooled(runs, tmp_path, capsys):
    """A second alibi run of the same model, length and seed with another ``encoding.num_heads`` (another run
    id) would be read as a third seed of the alibi row: the report refuses in one line naming the setting."""
    other = _copy_with(runs, tmp_path, "alibi_", "num_heads", 1)
    err = _refused(capsys, runs, other, "--out", tmp_path / "rep")
    assert "runs of one row (encoding alibi," in err and "differ in encoding.num_heads" in err
    assert "--where encoding.num_heads=" in err
    assert not (tmp_path / "rep").exists()  # nothing half-written


def test_runs_at_another_rope_base_are_a_panel_of_their_own(runs, tmp_path):
    """RoPE's base is an axis (experiment=rope_base): a rope run at another base is no seed of the rope row
    but a panel of its own, its model named with its base (report/records/load.py with_base_labels)."""
    from posbench.report.context import Options, ReportContext

    other = _copy_with(runs, tmp_path, "rope_", "base", 500000.0)
    ctx = ReportContext.load([runs, other], Options(0.05, 0.02, 0.1, 0.8), tmp_path / "rep")
    rope = ctx.completed[ctx.completed["encoding"] == "rope"]
    assert "tiny|base=500000" in set(rope["model"]) and "tiny|base=10000" in set(rope["model"])


def test_smoke_runs_beside_real_ones_are_left_out_and_never_a_budget(runs, tmp_path):
    """The shared sweep's runs are train=smoke (20 steps); a copy of each at the default recipe
    (200 steps here) is a real run: the smoke runs are left out, with one line, and no budget
    section compares 20 with 200 steps."""
    real = tmp_path / "real"
    for metrics in list(runs.rglob("metrics.json")):
        src = metrics.parent
        dst = real / (src.name + "r")
        shutil.copytree(src, dst)
        cfg = yaml.safe_load((dst / "config.yaml").read_text())
        cfg["train"].update(steps=200, batch_size=32, warmup_steps=50, val_every=200, val_batches=8, log_every=10)
        (dst / "config.yaml").write_text(yaml.safe_dump(cfg))
        m = json.loads((dst / "metrics.json").read_text())
        m["run_id"], m["train_steps"] = m["run_id"] + "r", 200
        m["train_tokens"] = (m.get("train_tokens") or 0) * 10
        (dst / "metrics.json").write_text(json.dumps(m))
    out = tmp_path / "rep"
    _report(runs, real, "--out", out, "--protocols", "nonoverlapping")
    md = (out / "report.md").read_text()
    assert "5 `train=smoke` runs (a smoke test of a few steps) left out" in md
    assert "by training budget" not in md.lower() and not math.isnan(0.0)
