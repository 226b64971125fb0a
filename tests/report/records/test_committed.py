"""posbench/report/records/committed.py through ``posbench-report FOLDER --rebuild``: a committed report rebuilt
from the records it kept gives the report its runs gave (only the figures drawn from the runs' own
files are carried over, and said to be); records of some of its runs retrained later are taken whole
(a row and its control from the same weights), only where they reproduce the records both hold."""

import gzip
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from posbench.cli.report import main
from posbench.report.records.committed import load_committed
from posbench.report.drawing.png import palette_png
from posbench.report.records.manifest import manifest_data, manifest_path

QUICK = Path(__file__).parents[3] / "results" / "quick"  # made from its runs by the current code (COMMAND.md)


def rebuild(folder: Path, *extra: Path) -> None:
    main([str(folder), "--rebuild", *(a for x in extra for a in ("--with", str(x)))])


@pytest.fixture
def quick(tmp_path) -> Path:
    folder = tmp_path / "quick"
    shutil.copytree(QUICK, folder, ignore=shutil.ignore_patterns("screenshots"))
    return folder


def _sections(text: str) -> dict[str, str]:
    parts = text.split("\n## ")
    return {p.split("\n", 1)[0]: p for p in parts[1:]}


def test_a_rebuilt_report_is_the_report_its_runs_gave(quick):
    rebuild(quick)
    before, after = _sections((QUICK / "report.md").read_text()), _sections((quick / "report.md").read_text())
    # every committed section, in the same order; a section the code gained since is the current code's
    # (compared when the committed report is rebuilt), so a new section needs no edit here
    assert [t for t in after if t in before] == list(before)
    carried = {"Loss by position at the longest length", "Training curves", "Files"}
    relabelled = ("Commands (from each Hydra sweep's `multirun.yaml` and each run's `metrics.json`):",
                  "Commands (as the committed report recorded them):")  # the provenance's source, said as it is
    rebuilt = "How these runs were made"  # opens with what a rebuild keeps and recomputes
    figure = ("the window control](window_curves.png)",  # key tokens: the table from the committed key_tokens.csv,
              "the window control (the committed report's figure, not redrawn)](window_curves.png)")  # the figure kept
    for title in set(before) - carried - {rebuilt}:
        assert after[title] == before[title].replace(*relabelled).replace(*figure), title
    assert "| nonoverlapping | small   | 64          | rope       | 16x" in after["Key tokens: does each row use the context past train_len?"]
    account = after[rebuilt].split("\n\n")[1]
    assert account.startswith("This report was rebuilt from the records it kept") and "they are its own, and say so" in account
    assert after[rebuilt].replace(account + "\n\n", "") == before[rebuilt].replace(*relabelled)
    for name in ("table.csv", "pairs.csv", "convergence.csv", "runs.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(quick / name), pd.read_csv(QUICK / name), check_exact=False, rtol=1e-12)
    intro = (quick / "report.md").read_text().split("\n## ")[0]
    assert "rebuilt from the records it kept" in intro and len(intro.split("\n\n")) == 2  # the title and one sentence
    assert "(the committed report's figure, not redrawn)" in after["Training curves"]
    # the committed figure, not redrawn: as it was, or re-encoded once as figures are stored now
    assert (quick / "training_curves.png").read_bytes() == palette_png((QUICK / "training_curves.png").read_bytes())


def edit_manifest(folder: Path, change) -> None:
    data = manifest_data(folder)
    change(data)
    manifest_path(folder).write_bytes(gzip.compress(json.dumps(data).encode()) if manifest_path(folder).suffix == ".gz"
                                      else json.dumps(data).encode())


def test_what_a_report_left_out_is_left_out_and_named_again(quick):
    """Records on another token set (not_compared.csv) and rows named as not applying (the manifest)
    were never among the compared records: a rebuild lists and names them as the report did."""
    pd.DataFrame([{"run_id": "rope_x", "variant": "rope", "protocol": "nonoverlapping", "token_set": "other",
                   "compared_set": "main", "lengths": "16, 32"}]).to_csv(quick / "not_compared.csv", index=False)
    edit_manifest(quick, lambda m: m.update(not_applicable=["rope+logn"]))
    rebuild(quick)
    section = (quick / "report.md").read_text().split("## Records not compared")[1].split("\n## ")[0]
    assert "`rope+logn`" in section and "rope_x" in section and "16, 32" in section
    assert pd.read_csv(quick / "not_compared.csv")["run_id"].tolist() == ["rope_x"]
    assert manifest_data(quick)["not_applicable"] == ["rope+logn"]  # kept for the next
    main([str(quick), "--rebuild", "--protocols", "sliding", "--out", str(quick.parent / "sliding")])
    assert "rope_x" not in (quick.parent / "sliding" / "report.md").read_text()  # its protocol is not reported


def test_rebuilding_twice_changes_nothing(quick):
    rebuild(quick)
    first = (quick / "report.md").read_text()
    rebuild(quick)
    assert (quick / "report.md").read_text() == first
    assert manifest_data(quick) == manifest_data(QUICK)


def test_the_runs_of_a_committed_report_are_its_records_with_the_manifests_configs():
    loaded = load_committed(QUICK)
    assert sorted(loaded.runs["run_id"]) == sorted(pd.read_csv(QUICK / "evaluations.csv.gz")["run_id"].unique())
    assert {f.config_text.rstrip() for f in loaded.files.values()} == {
        c.rstrip() for c in manifest_data(QUICK)["configs"].values()}
    recorded = loaded.recorded
    assert recorded.commands == ["posbench-train -m experiment=quick"] and recorded.joins == []
    assert recorded.environment.loc[0, "runs"] == "5"


def test_a_rebuild_reads_the_manifest_and_never_the_words_of_the_report(quick, tmp_path):
    """The committed report.md reworded (or gone) rebuilds the same report; what the
    rebuild shows of the provenance comes from manifest.json.gz."""
    main([str(quick), "--rebuild", "--out", str(tmp_path / "first")])
    (quick / "report.md").write_text("# a report in other words\n\nCommands (elsewhere):\n\n```\nrm -rf /\n```\n")
    main([str(quick), "--rebuild", "--out", str(tmp_path / "reworded")])
    assert (tmp_path / "reworded" / "report.md").read_text() == (tmp_path / "first" / "report.md").read_text()
    (quick / "report.md").unlink()
    edit_manifest(quick, lambda m: m.update(commands=["posbench-train -m experiment=elsewhere"]))
    main([str(quick), "--rebuild", "--out", str(tmp_path / "edited")])
    text = (tmp_path / "edited" / "report.md").read_text()
    assert "```\nposbench-train -m experiment=elsewhere\n```" in text


@pytest.fixture
def without_controls(quick) -> Path:
    """results/quick without its +swaL rows, as a report scored before the control existed."""
    evals = pd.read_csv(quick / "evaluations.csv.gz")
    evals[~evals["variant"].str.endswith("+swaL")].to_csv(quick / "evaluations.csv.gz", index=False)
    return quick


def test_records_of_the_same_runs_add_the_rows_the_report_lacked(without_controls):
    rebuild(without_controls)
    assert set(pd.read_csv(without_controls / "table.csv")["far_context"].dropna()) == {"no window control"}
    rebuild(without_controls, QUICK)
    text = (without_controls / "report.md").read_text()
    assert "every record of its 5 runs on nonoverlapping, sliding windows (100 records, 50 of rows this report lacked)" in text
    assert "at most 0.0e+00 (alibi), 0.0e+00 (learned)" in text
    table = pd.read_csv(without_controls / "table.csv")
    gains = table.loc[~table["windowed"] & table["16x"].notna(), "far_gain"]  # every row scored at 16x has its gain
    assert gains.notna().all() and (gains > 0).all() and "alibi+swaL" in set(table["variant"])


def retrained(tmp_path, change: float, protocol: str | None = None) -> Path:
    """results/quick's records with rope's perplexities changed by ``change`` (relative), as if rope were
    retrained on numerically different code (``protocol``: and scored on that protocol only)."""
    other = tmp_path / f"other{change}"
    other.mkdir()
    evals = pd.read_csv(QUICK / "evaluations.csv.gz")
    evals.loc[evals["encoding"] == "rope", "ppl"] *= 1 + change
    evals = evals[evals["protocol"] == protocol] if protocol else evals
    evals.to_csv(other / "evaluations.csv.gz", index=False)
    return other


def test_a_retrained_run_replaces_all_its_records_and_its_difference_is_stated(without_controls, tmp_path):
    """A retrained run's records on the protocols the other folder scored replace the report's; its
    other protocols stay as they were (panels, and a row's pairing with its control, are per protocol)."""
    other = retrained(tmp_path, 0.002, "nonoverlapping")
    rebuild(without_controls, other)
    first = (without_controls / "report.md").read_text()
    assert "2.0e-03 (rope)" in first
    joins = manifest_data(without_controls)["joins"]
    assert [(j["folder"], j["runs"], j["protocols"]) for j in joins] == [(str(other), 5, ["nonoverlapping"])]
    rebuild(without_controls, other)  # the records now hold other's: it is not joined (compared with itself) again
    rebuild(without_controls)
    assert (without_controls / "report.md").read_text() == first
    table = pd.read_csv(without_controls / "table.csv").set_index(["protocol", "variant"])
    rope = pd.read_csv(QUICK / "evaluations.csv.gz").query("variant == 'rope' and length == 64").set_index("protocol")["ppl"]
    assert table.loc[("nonoverlapping", "rope"), "1x"] == pytest.approx(rope["nonoverlapping"] * 1.002, rel=1e-6)
    assert table.loc[("sliding", "rope"), "1x"] == pytest.approx(rope["sliding"], rel=1e-6)
    assert ("nonoverlapping", "rope+swaL") in table.index and ("sliding", "rope+swaL") not in table.index


def refused(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_records_that_do_not_reproduce_the_shared_ones_are_refused_and_nothing_is_written(without_controls, tmp_path,
                                                                                           capsys):
    before = {p.name: p.read_bytes() for p in without_controls.iterdir()}
    err = refused(capsys, str(without_controls), "--rebuild", "--with", str(retrained(tmp_path, 0.05)))
    assert "does not reproduce this report's records" in err and "5.00e-02" in err
    assert {p.name: p.read_bytes() for p in without_controls.iterdir()} == before


def test_a_rebuild_written_elsewhere_carries_the_committed_figures_there(quick, tmp_path):
    main([str(quick), "--rebuild", "--out", str(tmp_path / "out")])
    text = (tmp_path / "out" / "report.md").read_text()
    assert "## Training curves" in text and "(the committed report's figure, not redrawn)" in text
    assert (tmp_path / "out" / "training_curves.png").read_bytes() == palette_png((QUICK / "training_curves.png").read_bytes())


def test_a_folder_joined_once_is_not_joined_again_under_another_spelling(without_controls, tmp_path, capsys):
    other = retrained(tmp_path, 0.002, "nonoverlapping")
    rebuild(without_controls, other)
    first = (without_controls / "report.md").read_text()
    rebuild(without_controls, Path(str(other) + "/"))  # the same folder, spelt otherwise
    assert (without_controls / "report.md").read_text() == first
    assert "is the folder being rebuilt" in refused(capsys, str(without_controls), "--rebuild", "--with",
                                                    str(without_controls))


def test_a_folder_that_is_not_a_committed_report_is_refused_in_one_line(tmp_path, quick, capsys):
    assert "has no manifest.json.gz" in refused(capsys, str(tmp_path), "--rebuild")
    edit_manifest(quick, lambda m: m.update(configs={}))  # records without the manifest that keeps their configs
    assert "holds no config of run" in refused(capsys, str(quick), "--rebuild")
    assert "needs --rebuild" in refused(capsys, str(quick), "--with", str(QUICK))
    # in place, --protocols would drop the other protocols' records from the folder for good
    assert "give --out another folder" in refused(capsys, str(quick), "--rebuild", "--protocols", "sliding")


def test_task_records_on_another_example_set_stay_left_out_in_a_rebuild(tmp_path):
    """task_records.csv keeps the records on another example set too: a rebuild leaves out the same
    ones, says so, and keeps them for the next."""
    folder = tmp_path / "tasks"
    shutil.copytree(QUICK.parent / "tasks", folder, ignore=shutil.ignore_patterns("screenshots"))
    records = pd.read_csv(folder / "task_records.csv")
    other = records[records["task"] == "passkey"].head(3).assign(example_set="passkey:other")
    pd.concat([records, other]).to_csv(folder / "task_records.csv", index=False)
    rebuild(folder)
    assert "3 task records were scored on another example set" in (folder / "report.md").read_text()
    assert (pd.read_csv(folder / "task_records.csv")["example_set"] == "passkey:other").sum() == 3
    assert pd.read_csv(folder / "tasks.csv").equals(pd.read_csv(QUICK.parent / "tasks" / "tasks.csv"))


@pytest.mark.parametrize("damage, words", [
    (lambda f: f.drop(columns="ppl"), "lacks the column(s) ppl"),
    (lambda f: f.assign(ppl=f["ppl"].astype(object).where(f.index != 3, "n/a")), "record 5 (run"),
    (lambda f: f.assign(ppl=f["ppl"].where(f.index != 3, -2.0)), "perplexity -2.0, where a finite number >= 1"),
    (None, "perplexity nan, where a finite number >= 1"),
    (lambda f: f.assign(ppl=f["ppl"].where(f.index != 3, float("inf"))), "perplexity inf"),
    (lambda f: pd.concat([f, f.iloc[[3]]]), "2 records repeat the same run"),
], ids=["column", "not-a-number", "negative", "nan", "inf", "duplicated"])
def test_a_damaged_committed_csv_is_refused_in_one_line_and_the_report_is_not_rewritten(quick, capsys, damage, words):
    """NaN or inf perplexities would silently rewrite the verdicts; a missing column, a non-number or a
    negative one would end in a traceback; a duplicated record would count twice."""
    csv = quick / "evaluations.csv.gz"
    frame = pd.read_csv(csv)
    if damage is None:  # NaN on a record that has no reason it was not scored (row 3 is a scored one)
        assert pd.isna(frame.loc[3, "reason"]) and pd.notna(frame.loc[3, "ppl"])
        frame.loc[3, "ppl"] = float("nan")
    else:
        frame = damage(frame)
    frame.to_csv(csv, index=False)
    before = {p.name: p.read_bytes() for p in quick.iterdir() if p.is_file()}
    assert words in refused(capsys, str(quick), "--rebuild")
    assert {p.name: p.read_bytes() for p in quick.iterdir() if p.is_file()} == before


def test_a_rebuild_keeps_the_committed_key_token_table_and_refuses_a_damaged_one(quick, capsys):
    """The records keep no per-token losses: a rebuild reads the committed key_tokens.csv (numbers kept,
    layout current); one that lost a column is refused in one line and nothing is rewritten."""
    table = pd.read_csv(quick / "key_tokens.csv")
    table.drop(columns="seeds_with_keys").to_csv(quick / "key_tokens.csv", index=False)
    before = (quick / "report.md").read_bytes()
    assert "lacks the column(s) seeds_with_keys" in refused(capsys, str(quick), "--rebuild")
    assert (quick / "report.md").read_bytes() == before


def text(p: Path) -> str:
    return gzip.decompress(p.read_bytes()).decode()


def write(p: Path, content: str) -> None:
    p.write_bytes(gzip.compress(content.encode()))


@pytest.mark.parametrize("damage, words", [
    (lambda p: p.unlink(), "has no manifest.json.gz"),
    (lambda p: p.write_bytes(p.read_bytes()[:200]), "cannot read"),  # a torn gzip stream
    (lambda p: write(p, text(p)[:200]), "cannot read"),  # whole gzip, torn JSON
    (lambda p: write(p, "[]"), "is not a posbench report manifest of format 1"),
    (lambda p: write(p, text(p).replace('"format": 1', '"format": 7')), "(format: 7)"),
    (lambda p: write(p, json.dumps({k: v for k, v in json.loads(text(p)).items() if k != "commands"})),
     "lacks the field(s) commands"),
    (lambda p: write(p, json.dumps({**json.loads(text(p)), "commands": "posbench-train"})),
     "field 'commands' is not what format 1 holds"),
], ids=["missing", "torn", "torn-json", "not-an-object", "format", "field", "type"])
def test_a_missing_or_damaged_manifest_is_refused_in_one_line_and_nothing_is_written(quick, capsys, damage, words):
    damage(manifest_path(quick))
    before = {p.name: p.read_bytes() for p in quick.iterdir() if p.is_file()}
    err = refused(capsys, str(quick), "--rebuild")
    assert words in err and "scripts/convert_manifests.py" in err
    assert {p.name: p.read_bytes() for p in quick.iterdir() if p.is_file()} == before


def test_a_joined_report_s_key_tokens_replace_the_rows_of_its_runs(quick, tmp_path):
    """A report of some of the same runs re-scored later (its window control changed, say) brings its own
    key-token rows: the rebuild shows them in place of the committed ones, keeps the other rows, and
    says that the carried figure's curves of those rows predate the re-scoring."""
    other = retrained(tmp_path, 0.0)
    keys = pd.read_csv(QUICK / "key_tokens.csv")
    rope = keys[keys["variant"] == "rope"].assign(share=0.5)
    alibi = keys[keys["variant"] == "alibi"].assign(share=0.7, seeds=keys["seeds"] - 1)  # fewer seeds: not the cell's row
    elsewhere = rope.assign(model="medium", share=0.9)  # a cell this report does not have: not added
    pd.concat([rope, alibi, elsewhere]).to_csv(other / "key_tokens.csv", index=False)
    rebuild(quick, other)
    after = pd.read_csv(quick / "key_tokens.csv")
    assert (after.loc[after["variant"] == "rope", "share"] == 0.5).all() and len(after) == len(keys)
    assert not (after["share"] == 0.7).any() and "medium" not in set(after["model"])
    others = after[after["variant"] != "rope"].reset_index(drop=True)
    pd.testing.assert_frame_equal(others, keys[keys["variant"] != "rope"].reset_index(drop=True), check_like=True)
    assert "the curves of `rope` (small) are from before their runs were re-scored" in (quick / "report.md").read_text()


def test_window_controls_scored_anew_replace_the_report_s_and_say_so(quick, tmp_path):
    """The same runs with their window controls scored under a corrected definition: the full passes
    show the weights are the same (checked), the controls are taken with their change stated; a
    join whose full passes differ is still refused."""
    other = tmp_path / "rescored"
    other.mkdir()
    evals = pd.read_csv(QUICK / "evaluations.csv.gz")
    control = evals["variant"].str.endswith("+swaL")
    evals.loc[control, "ppl"] *= 1.05
    evals.to_csv(other / "evaluations.csv.gz", index=False)
    rebuild(quick, other)
    text = (quick / "report.md").read_text()
    assert "its window controls were scored anew and replace this report's (largest change 5.0e-02" in text
    joins = manifest_data(quick)["joins"]
    assert joins[0]["rescored"] and all(v.endswith("+swaL") for v in joins[0]["rescored"])
    table = pd.read_csv(quick / "table.csv").set_index(["protocol", "variant"])
    before = pd.read_csv(QUICK / "table.csv").set_index(["protocol", "variant"])
    row = ("nonoverlapping", "alibi+swaL")
    assert table.loc[row, "16x"] == pytest.approx(before.loc[row, "16x"] * 1.05, rel=1e-6)
    rebuild(quick)  # the manifest keeps the join: rebuilding again changes nothing
    assert (quick / "report.md").read_text() == text


def test_a_report_made_before_its_records_were_compressed_is_read_and_rewritten_compressed(quick):
    """A committed report of an older posbench has evaluations.csv: a rebuild reads it and writes the same
    records compressed (evaluations.csv.gz, the same bytes once decompressed) in its place."""
    packed = (quick / "evaluations.csv.gz").read_bytes()
    (quick / "evaluations.csv").write_bytes(gzip.decompress(packed))
    (quick / "evaluations.csv.gz").unlink()
    rebuild(quick)
    assert not (quick / "evaluations.csv").exists()
    assert (quick / "evaluations.csv.gz").read_bytes() == packed  # no timestamp in the header: the same bytes
