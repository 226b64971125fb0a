"""The committed studies' records files (posbench/store/records.py) give their committed reports: a report
made from a records file has the committed tables, and every committed report rebuilt from its records
(``--rebuild``: evaluations.csv.gz and manifest.json.gz) is itself again, tables and words."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest
from posbench.report.records.manifest import manifest_data

from tests.conftest import cli

RESULTS = Path(__file__).resolve().parents[2] / "results"


def text_of(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()


def same_tables(made: Path, committed: Path, names) -> None:
    for name in names:
        if not text_of(committed / name).strip():  # an empty table (no change to list): empty again
            assert not text_of(made / name).strip(), name
            continue
        pd.testing.assert_frame_equal(pd.read_csv(made / name), pd.read_csv(committed / name), obj=name)


def test_the_budget_study_s_records_give_its_committed_tables(tmp_path):
    cli("posbench.cli.report", str(RESULTS / "budget" / "records.parquet"), "--out", str(tmp_path))
    same_tables(tmp_path, RESULTS / "budget", ["table.csv", "budgets.csv", "budget_trends.csv", "evaluations.csv.gz",
                                               "pairs.csv"])


@pytest.mark.slow  # ~35 s: 280 runs
def test_the_map_s_records_give_its_committed_map(tmp_path):
    cli("posbench.cli.report", str(RESULTS / "map" / "records" / "lines.parquet"), "--out", str(tmp_path))
    same_tables(tmp_path, RESULTS / "map", ["table.csv", "evaluations.csv.gz", "map_points.csv", "map_words.csv",
                                            "map_changes.csv", "budgets.csv"])


@pytest.mark.slow  # every committed report: about 6 minutes (scripts/rebuild_reports.sh does the same in place)
# results/quick is made from runs, not rebuilt: tests/report/records/test_committed.py checks that its rebuild is the report its runs gave
@pytest.mark.parametrize("folder", sorted({p.parent.relative_to(RESULTS) for p in RESULTS.rglob("manifest.json*")
                                          if p.parent.name != "quick"}), ids=str)
def test_every_committed_report_rebuilds_to_itself(folder, tmp_path):
    committed = RESULTS / folder
    joins = [a for j in manifest_data(committed).get("joins") or [] for a in ("--with", j["folder"])]
    # from the repository's root, the folder named as scripts/rebuild_reports.sh names it (the report's words name it)
    cli("posbench.cli.report", str(Path("results") / folder), "--rebuild", *joins, "--out", str(tmp_path / "out"),
        cwd=RESULTS.parent)
    made = tmp_path / "out"
    written = sorted(p.name for p in made.glob("*.csv"))  # a committed folder may hold other tables beside (the map's grids)
    assert set(written) <= {p.name for p in committed.glob("*.csv")}
    same_tables(made, committed, written)
    assert (made / "report.md").read_text() == (committed / "report.md").read_text()
