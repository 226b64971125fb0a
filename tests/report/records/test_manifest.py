"""posbench/report/records/manifest.py: what a report keeps for its rebuild, as data beside report.md;
read back exactly as written, and refused in one line where damaged."""

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from posbench.core.errors import PosbenchError
from posbench.core.paths import portable
from posbench.report.drawing.document import Table
from posbench.report.records.manifest import (MANIFEST, OLD_MANIFEST, Join, Manifest, manifest_of, read_manifest,
                                              scored_documents, shown_cells, write_manifest)
from posbench.report.records.provenance import environment, shown_runs


def test_a_manifest_reads_back_as_it_was_written(tmp_path):
    made = Manifest({"rope_s0": "encoding:\n  name: rope\n", "alibi_s0": "encoding:\n  name: alibi\n"},
                    ["posbench-train -m experiment=quick"],
                    pd.DataFrame([["cpu (1 threads)", "30252179", "5"]], columns=["device", "train tokens", "runs"]),
                    [Join("results/far_context/modern", 9, ("nonoverlapping",), 210, 75, {"alibi": 4.7e-06})],
                    ["rope+logn"], {"h:segments[64, 1 per doc, from 64]": {"docs": [0, 2], "tokens": 128,
                                                                           "documents_in_split": 9}})
    write_manifest(tmp_path, made)
    assert (tmp_path / MANIFEST).read_bytes()[:2] == b"\x1f\x8b"  # gzip
    back = read_manifest(tmp_path)
    assert list(back.configs) == ["rope_s0", "alibi_s0"] and back.configs == made.configs  # the report's order
    assert (back.commands, back.joins, back.not_applicable, back.scored_text) == (
        made.commands, made.joins, made.not_applicable, made.scored_text)
    pd.testing.assert_frame_equal(back.environment, made.environment, check_dtype=False)
    assert back.to_json() == made.to_json()
    assert back.joins[0].line().startswith("`results/far_context/modern`: every record of its 9 runs on nonoverlapping "
                                           "windows (210 records, 75 of rows this report lacked)")
    first = (tmp_path / MANIFEST).read_bytes()
    write_manifest(tmp_path, back)
    assert (tmp_path / MANIFEST).read_bytes() == first  # the same manifest, the same bytes (no time in the header)


def test_a_report_written_before_the_manifest_was_compressed_is_read_and_replaced(tmp_path):
    """An older report's manifest.json (the same JSON, uncompressed) is read; the next write leaves the
    compressed one alone beside report.md."""
    made = Manifest({"rope_s0": "encoding:\n  name: rope\n"}, ["posbench-train"], pd.DataFrame({"runs": ["1"]}))
    (tmp_path / OLD_MANIFEST).write_text(made.to_json())
    assert read_manifest(tmp_path).configs == made.configs
    write_manifest(tmp_path, made)
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST]


def test_cells_are_kept_as_the_table_shows_them():
    """The markdown table (tabulate, no number parsing) shows str(value) and nothing for None: the
    rebuilt table must show the same text, not a number's other spelling."""
    frame = pd.DataFrame({"device": ["cpu ", None], "tokens": [30252179, 7], "lr": [0.002, 1e-05],
                          "corpus": pd.Series([None, "stdlib"], dtype=object), "val": [1, None]})
    shown = [[c.strip() for c in line.strip("|").split("|")] for line in Table(frame).md(None).splitlines()[2:]]
    assert shown_cells(frame).values.tolist() == shown == [["cpu", "30252179", "0.002", "", "1.0"],
                                                           ["nan", "7", "1e-05", "stdlib", "nan"]]


def test_only_token_sets_that_name_their_documents_are_kept():
    sets = {"a": {"docs": [1, 2], "tokens": 8, "documents_in_split": 4, "doc_tokens": [4, 4]},
            "b": {"doc_tokens": [4, 4]}, "c": {"docs": [0], "tokens": 4, "documents_in_split": 4, "bytes": 12}}
    assert scored_documents(sets, {"a", "b"}) == {"a": {"docs": [1, 2], "tokens": 8, "documents_in_split": 4}}
    assert scored_documents(sets, {"c"})["c"]["bytes"] == 12


def test_a_report_from_runs_keeps_its_shown_runs_commands_and_environment(sweep_context, sweep_report):
    made = manifest_of(sweep_context)
    runs = shown_runs(sweep_context)
    assert list(made.configs) == list(runs["run_id"])
    for rid, d in zip(runs["run_id"], runs["run_dir"]):  # as written, this machine's paths portable
        written = (Path(d) / "config.yaml").read_text()
        assert made.configs[rid] == portable(written) and str(Path(d).parent) not in made.configs[rid]
        assert str(Path(d).parent) in written
    assert made.commands and all(c.startswith("posbench-train") for c in made.commands)
    assert made.environment.values.tolist() == shown_cells(environment(runs)).values.tolist()
    assert made.joins == [] and made.not_applicable == []
    written = read_manifest(sweep_report)  # the pipeline writes it beside report.md
    assert written.configs == made.configs and written.commands == made.commands


def test_a_damaged_manifest_is_one_line_naming_the_file_and_the_fix(tmp_path):
    (tmp_path / MANIFEST).write_bytes(gzip.compress(json.dumps({
        "format": 1, "configs": {}, "commands": [], "joins": [], "not_applicable": [], "scored_text": {},
        "environment": {"columns": ["a"], "rows": [[1]]}}).encode()))
    with pytest.raises(PosbenchError, match="field 'environment' is not what format 1 holds") as e:
        read_manifest(tmp_path)
    assert "\n" not in str(e.value) and "convert_manifests.py" in str(e.value)
