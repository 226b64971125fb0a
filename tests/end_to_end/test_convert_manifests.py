"""scripts/convert_manifests.py: a report committed before manifest.json gets one from the words of its
report.md, once, and rebuilds from it as from the manifest the report would have written."""

import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from posbench.cli.report import main as report
from posbench.report.records.manifest import Join, manifest_data, read_manifest
from posbench.report.analysis.prose import scored_text_note

ROOT = Path(__file__).parents[2]
QUICK = ROOT / "results" / "quick"
sys.path.insert(0, str(ROOT / "scripts"))
from convert_manifests import joins, main, scored_text  # noqa: E402


def test_the_scored_text_line_reads_back_in_both_wordings():
    """What report/analysis/prose.py writes, bytes and a subword set alike, is what the conversion reads back."""
    sets = {"h:segments[64, 1 per doc, from 64]": {"docs": [0, 1, 2, 7], "doc_tokens": [64] * 4, "tokens": 256,
                                                   "documents_in_split": 9},
            "bpe:h:segments[64, 1 per doc, from 64]": {"docs": [0, 1, 2, 7], "doc_tokens": [20] * 4, "tokens": 80,
                                                       "documents_in_split": 9, "bytes": 256}}
    line = scored_text_note(pd.DataFrame({"token_set": list(sets)}), sets)
    assert "a small validation set" in line
    assert scored_text(line) == {name: {k: v for k, v in info.items() if k != "doc_tokens"} for name, info in sets.items()}


def test_a_joined_folders_line_reads_back_as_the_fields_that_write_it():
    join = Join("results/far_context/modern", 9, ("nonoverlapping", "sliding"), 210, 75,
                {"alibi": 4.7e-06, "rope": 2.4e-03})
    assert joins(f"scored: {join.line()}; `x`.") == [join]
    with pytest.raises(ValueError, match="cannot read the difference"):
        joins(join.line().replace("4.7e-06 (alibi)", "about 4.7e-06 for alibi"))


def as_before_the_manifest(folder: Path) -> None:
    """A report as written before manifest.json: each shown run's config as a block of report.md (what
    reports listed then; today manifest.json keeps them), read from the committed manifest."""
    configs = manifest_data(QUICK)["configs"]
    blocks = "".join(f"\n\n<details><summary>config of {rid}</summary>\n\n```\n{text.rstrip()}\n```\n\n</details>"
                     for rid, text in configs.items())
    (folder / "report.md").write_text((folder / "report.md").read_text().rstrip("\n") + blocks + "\n")


def test_a_converted_report_rebuilds_as_from_the_manifest_its_report_writes(tmp_path, capsys):
    old, committed = tmp_path / "old" / "quick", tmp_path / "committed" / "quick"
    shutil.copytree(QUICK, old, ignore=shutil.ignore_patterns("screenshots", "manifest.json*"))
    as_before_the_manifest(old)
    shutil.copytree(QUICK, committed, ignore=shutil.ignore_patterns("screenshots"))
    assert main([str(old)]) == 0
    assert "wrote manifest.json.gz (5 configs, 1 commands, 1 environment rows" in capsys.readouterr().out
    made = read_manifest(old)
    assert made.commands == ["posbench-train -m experiment=quick"] and made.joins == [] and len(made.scored_text) == 1
    assert made.environment.loc[0, "train tokens"] == "30252179"  # every cell as the table shows it
    for folder in (old, committed):  # the same place relative to the report: the same folder name in its words
        report([str(folder), "--rebuild", "--out", str(folder.parent / "out")])
    assert (old.parent / "out" / "report.md").read_text() == (committed.parent / "out" / "report.md").read_text()
    assert main([str(old), "--check"]) == 0
    assert main([str(old)]) == 0 and "has manifest.json.gz already, kept" in capsys.readouterr().out


def test_a_folder_without_a_report_fails_in_one_line_and_the_others_are_converted(tmp_path, capsys):
    good = tmp_path / "good"
    shutil.copytree(QUICK, good, ignore=shutil.ignore_patterns("screenshots", "manifest.json*"))
    as_before_the_manifest(good)
    assert main([str(tmp_path / "none"), str(good)]) == 1
    assert capsys.readouterr().err.strip() == f"{tmp_path / 'none'}: cannot convert: no report.md"
    assert manifest_data(good)["format"] == 1
