"""The "Records not compared" section (posbench/report/sections/not_compared.py): a report never compares
numbers scored on different tokens; the records left out are listed."""

import shutil

import pandas as pd
import pytest

from posbench.store.rundir import RunDir
from tests.conftest import cli


def test_a_report_never_compares_numbers_scored_on_different_tokens(sweep, tmp_path):
    """One run re-evaluated on other tokens is left out and listed, where it was once ranked against
    the others, and kept in not_compared.csv."""
    runs, _, _ = sweep
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    rope = next(copy.glob("rope_*"))
    cli("posbench.cli.evaluate", f"run_dir={rope}", "eval.multiples=[1,2,4]", "eval.protocols=[nonoverlapping]",
        "eval.scored_tokens=128")  # other tokens: fewer of them
    sets = {r["token_set"] for r in RunDir(rope).read_metrics()["evaluations"] if r["protocol"] == "nonoverlapping"}
    assert len(sets) == 2  # the old records are kept beside the new ones
    out = tmp_path / "rep"
    cli("posbench.cli.report", str(copy), "--out", str(out), "--protocols", "nonoverlapping")
    table = pd.read_csv(out / "table.csv")
    evals = pd.read_csv(out / "evaluations.csv.gz")
    assert evals["token_set"].nunique() == 1  # every compared record: one token set
    ours = [r for r in RunDir(rope).read_metrics()["evaluations"] if r["protocol"] == "nonoverlapping" and r["length"] == 16]
    compared = evals[(evals["variant"] == "rope") & (evals["length"] == 16)]["ppl"].tolist()
    kept = [r["ppl"] for r in ours if r["token_set"] == evals["token_set"].iloc[0]]
    assert compared == kept and len(set(r["ppl"] for r in ours)) == 2
    assert table.loc[table["variant"] == "rope", "1x"].item() == pytest.approx(kept[0])
    md = (out / "report.md").read_text()
    section = md.split("## Records not compared")[1].split("##")[0]
    assert rope.name in section and "segments[" in section and "16, 32, 64" in section
    kept = pd.read_csv(out / "not_compared.csv")  # what a rebuild lists (tests/report/records/test_committed.py)
    assert set(kept["run_id"]) == {rope.name} and set(kept["lengths"]) == {"16, 32, 64"}


def test_rows_a_variant_does_not_apply_to_are_named_and_nothing_else_is_claimed(sweep_context, tmp_path):
    from types import SimpleNamespace

    from posbench.report.sections.not_compared import NotCompared
    from tests.helpers import run_section

    assert not NotCompared().applies(sweep_context)  # every record of the sweep is compared
    stale = SimpleNamespace(has_lm=True, left_out=pd.DataFrame(), not_applicable=["irope+logn"])
    assert NotCompared().applies(stale)
    md, _ = run_section(NotCompared, stale, tmp_path)
    assert "left out of every table and figure: `irope+logn`." in md and "token set" not in md
