"""posbench-records (posbench/cli/records.py) and posbench-report reading a records file: a study kept as
one file reports as its runs folder does; bad input is one line and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.conftest import cli, tree

ROOT = Path(__file__).parents[2]


def test_a_report_of_the_records_file_has_the_tables_of_the_runs_folder(sweep, sweep_report, tmp_path):
    runs, _, _ = sweep
    records = tmp_path / "study.parquet"
    kept = cli("posbench.cli.records", "keep", str(runs), str(records))
    assert "runs added or updated" in kept.stdout
    listed = cli("posbench.cli.records", "list", str(records)).stdout.splitlines()
    assert sum(" completed " in line for line in listed) == len(list(runs.glob("*/metrics.json")))
    cli("posbench.cli.report", str(records), "--out", str(tmp_path / "report"))
    for name in ("table.csv", "evaluations.csv.gz", "runs.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "report" / name), pd.read_csv(sweep_report / name))
    back = tmp_path / "back"
    assert "folders written" in cli("posbench.cli.records", "unpack", str(records), str(back)).stdout
    assert {p.name for p in back.glob("*/metrics.json")} and not list(back.rglob("checkpoint.pt"))


def test_records_in_a_folder_git_ignores_are_refused_before_anything_is_written(tmp_path):
    (tmp_path / "runs").mkdir()
    dest = ROOT / "runs" / "kept-by-a-test.parquet"  # the repository ignores every folder named runs/
    proc = cli("posbench.cli.records", "keep", str(tmp_path / "runs"), str(dest), check=False)
    assert proc.returncode == 2 and "git ignores" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not dest.exists()


def test_bad_input_is_one_line_and_writes_nothing(tmp_path, sweep):
    runs, _, _ = sweep
    cases = [
        (("posbench.cli.records", "keep", str(runs), str(tmp_path / "kept.zip")), "must end in .parquet"),
        (("posbench.cli.records", "keep", str(tmp_path / "none"), str(tmp_path / "k.parquet")), "is not a folder"),
        (("posbench.cli.records", "unpack", str(tmp_path / "none.parquet"), str(tmp_path / "d")), "is not a records file"),
        (("posbench.cli.records", "pack", str(runs)), "invalid choice: 'pack'"),
        (("posbench.cli.report", str(tmp_path / "s.parquet")), "give --out"),
    ]
    for args, words in cases:
        proc = cli(*args, check=False)
        assert proc.returncode == 2 and words in proc.stderr, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert tree(tmp_path) == []


def test_a_place_git_ignores_is_told_from_one_it_keeps(tmp_path):
    from posbench.cli.records import ignored

    assert ignored(ROOT / "runs" / "x.parquet") and ignored(ROOT / "runs" / "deep" / "x.parquet")
    assert not ignored(ROOT / "results" / "x.parquet") and not ignored(tmp_path / "x.parquet")  # outside a work tree
