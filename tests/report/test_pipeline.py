"""The report as sections (posbench/report/pipeline.py, section.py, records/load.py): each declares what it
writes (the Files list and the removal of stale files follow), each run's files are read once, and
damaged runs are skipped with one warning and listed. Every report here is built from a copy of the
shared sweep's seed-0 runs (no training)."""

import json
import logging
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from posbench.report.records.load import load_runs
from posbench.report.pipeline import build_report, sections
from posbench.report.section import SECTIONS, Output, Section, SectionOutput
from posbench.store.rundir import RunDir


@pytest.mark.parametrize("damage", ["no config.yaml", "corrupt per_position.npz", "corrupt history.json",
                                    "metrics of the wrong shape", "metrics torn"])
def test_report_skips_an_unreadable_run_and_lists_it(sweep, tmp_path, damage, caplog):
    from posbench.report.pipeline import build_report

    runs, _, _ = sweep
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    bad = next(copy.glob("rope_*"))
    if damage == "no config.yaml":
        (bad / "config.yaml").unlink()
    elif damage == "corrupt per_position.npz":
        (bad / "per_position.npz").write_bytes(b"PK\x03\x04garbage")
    elif damage == "corrupt history.json":
        (bad / "history.json").write_text('{"step": ')
    elif damage == "metrics of the wrong shape":
        (bad / "metrics.json").write_text(json.dumps({"status": "completed", "evaluations": "all good"}))
    else:
        (bad / "metrics.json").write_text('{"status": "compl')
    with caplog.at_level(logging.WARNING, logger="posbench"):
        build_report(copy, tmp_path / "rep", protocols=["nonoverlapping"])
    assert any(f"skipping run {bad}" in r.getMessage() for r in caplog.records)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "rope" not in set(__import__("pandas").read_csv(tmp_path / "rep" / "table.csv")["variant"])
    section = md.split("## Runs not in the table")[1]
    assert bad.name in section and "unreadable" in section


def report(runs_dir: Path, out: Path, **kw) -> str:
    return build_report(runs_dir, out, protocols=["nonoverlapping"], **kw).read_text()


def files_listed(md: str) -> list[str]:
    section = md.split("## Files")[1]
    return [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ") and "file " not in line]


# -- sections declare what they write ----------------------------------------------------------------


def test_the_files_list_is_what_the_report_folder_holds_and_every_file_is_declared(sweep_report):
    md = (sweep_report / "report.md").read_text()
    listed = files_listed(md)
    # the report's own files: its two renderings and what a rebuild reads (report/records/manifest.py)
    on_disk = sorted(p.name for p in sweep_report.iterdir() if p.name not in ("report.md", "report.html", "manifest.json.gz"))
    assert sorted(listed) == on_disk
    declared = [f for s in sections() for f in s.files]
    assert all(any(f.matches(name) for f in declared) for name in on_disk)
    for figure in (n for n in on_disk if n.endswith(".png")):
        assert f"]({figure})" in md  # every figure written is shown


def test_with_vector_every_drawn_figure_is_also_a_pdf_listed_and_linked_and_a_later_report_removes_it(runs, tmp_path):
    from posbench.report.context import Options
    from posbench.report.pipeline import make_report

    out = tmp_path / "rep"
    options = Options(0.05, 0.02, 0.1, 0.8, ["nonoverlapping"], vector=True)
    md = make_report(runs, out, options).path.read_text()
    html = (out / "report.html").read_text()
    figures = sorted(p.name for p in out.glob("*.png"))
    assert "ppl_vs_length.png" in figures
    for figure in figures:
        pdf = figure[:-4] + ".pdf"
        assert (out / pdf).read_bytes()[:5] == b"%PDF-", pdf
        assert f"]({figure}) ([PDF]({pdf}))" in md and f'<a href="{pdf}">PDF</a>' in html
        assert pdf in files_listed(md)
    md = report(runs, out)  # without --vector: no PDF of an older drawing is left beside the new PNG
    assert not list(out.glob("*.pdf")) and ".pdf" not in md and ">PDF</a>" not in (out / "report.html").read_text()


class Extra(Section):
    """A plug-in section: one table, while --tolerance stays below 10%."""

    name = "extra"
    order = 85  # between loss by position (80) and training curves (90)
    files = (Output("extra_<n>.csv", "an extra table"),)

    def applies(self, ctx) -> bool:
        return ctx.options.tolerance < 0.1

    def build(self, ctx, out) -> list:
        from posbench.report.drawing.document import Heading, Para

        out.csv("extra_1.csv", pd.DataFrame({"runs": [len(ctx.completed)]}))
        return [Heading("Extra"), Para("From another package.")]


def test_a_section_from_another_package_and_no_file_outlives_its_section(runs, tmp_path, monkeypatch):
    monkeypatch.setitem(SECTIONS._external, ("extra", None), Extra)  # as an entry point in posbench.report_sections would
    out = tmp_path / "rep"
    md = report(runs, out)
    assert md.index("## Loss by position") < md.index("## Extra\n") < md.index("## Training curves")
    assert pd.read_csv(out / "extra_1.csv")["runs"].tolist() == [5]
    assert {"extra_1.csv", "during_training.png", "during_training.csv"} <= set(files_listed(md))
    (out / "notes.txt").write_text("the user's")
    for run_dir in (p.parent for p in runs.glob("*/metrics.json")):  # as if trained without eval.during_training
        RunDir(run_dir).write_metrics({**RunDir(run_dir).read_metrics(), "during_training": []})
    md = report(runs, out, tolerance=0.2)  # the extra section no longer applies
    assert "## Extra\n" not in md and "during_training.png" not in md
    for gone in ("extra_1.csv", "during_training.png", "during_training.csv"):
        assert not (out / gone).exists(), gone
    assert (out / "notes.txt").read_text() == "the user's"  # not a file of any section


def test_a_section_writes_only_what_it_declares(tmp_path):
    written = {}
    out = SectionOutput(tmp_path, Extra(), written)
    out.text("extra_2.csv", "a\n1\n")
    assert written == {"extra_2.csv": "an extra table"}
    with pytest.raises(RuntimeError, match="'extra' writes 'other.csv', which it does not declare"):
        out.text("other.csv", "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["extra_2.csv"]


# -- each run's files read once -------------------------------------------------------------------


def test_each_file_of_a_run_is_read_once(runs, tmp_path, monkeypatch):
    import builtins
    import io

    opened: dict[str, int] = {}
    real = builtins.open

    def counting(file, *args, **kwargs):
        path = Path(os.fsdecode(file)) if isinstance(file, (str, bytes, os.PathLike)) else None
        if path is not None and path.parent.parent == runs:
            opened[str(path.relative_to(runs))] = opened.get(str(path.relative_to(runs)), 0) + 1
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting)
    monkeypatch.setattr(io, "open", counting)
    report(runs, tmp_path / "rep")
    monkeypatch.undo()
    expected = {f"{d.name}/{f}": 1 for d in runs.iterdir() if d.is_dir() and not d.name.startswith(".")
                for f in ("metrics.json", "config.yaml", "history.json", "per_position.npz")}
    assert len(expected) == 20 and opened == expected


# -- damaged runs: skipped with one warning, listed ----------------------------------------------


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


DAMAGES = {
    "empty config.yaml": (lambda d: (d / "config.yaml").write_text(""), "config.yaml is empty"),
    "non-numeric history entry": (lambda d: _edit_json(d / "history.json", lambda h: h[1].update(loss="n/a")),
                                  "history.json: loss 'n/a' is not a number"),
    "perplexity as a string": (lambda d: _edit_json(d / "metrics.json", lambda m: m["evaluations"][0].update(ppl="12.5")),
                               "metrics.json: evaluations record 0 has ppl '12.5', not a number or null"),
    "multiple null": (lambda d: _edit_json(d / "metrics.json", lambda m: m["evaluations"][0].update(multiple=None)),
                      "metrics.json: evaluations record 0 has multiple None, not a positive number"),
    "during-training record without variant": (
        lambda d: _edit_json(d / "metrics.json", lambda m: m["during_training"][0].pop("variant")),
        "metrics.json: during_training record 0 has no 'variant'"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_run_is_skipped_with_one_warning_naming_it(runs, damage, caplog):
    bad = next(runs.glob("rope_*"))
    make, reason = DAMAGES[damage]
    make(bad)
    with caplog.at_level(logging.WARNING, logger="posbench"):
        loaded = load_runs(runs)
    assert [r.getMessage() for r in caplog.records] == [f"skipping run {bad}: {reason}"]
    assert loaded.skipped == [{"run_dir": str(bad), "reason": reason}]
    assert str(bad) not in set(loaded.runs["run_dir"]) and len(loaded.runs) == 4


def test_a_messy_runs_folder_makes_a_report_that_lists_what_it_left_out(runs, tmp_path, caplog):
    rope = next(runs.glob("rope_*"))
    for i, (make, _) in enumerate(DAMAGES.values()):  # one damaged copy of the rope run per damage
        shutil.copytree(rope, runs / f"broken{i}")
        make(runs / f"broken{i}")
    (next(runs.glob("alibi_*")) / "metrics.json").unlink()  # killed: config.yaml only
    (next(runs.glob(".hydra/*/multirun.yaml"))).write_text("hydra: [")  # a torn sweep record
    task = runs / "task_run"  # a completed run of a synthetic task beside the language models
    shutil.copytree(next(runs.glob("nope_*")), task)
    RunDir(task).write_metrics({**RunDir(task).read_metrics(), "run_id": "task_run", "task": "passkey", "evaluations": []})
    with caplog.at_level(logging.WARNING, logger="posbench"):
        md = report(runs, tmp_path / "rep")
    for i in range(len(DAMAGES)):
        assert sum(f"broken{i}" in r.getMessage() for r in caplog.records) == 1, [r.getMessage() for r in caplog.records]
    assert sum("ignoring unreadable" in r.getMessage() and "multirun.yaml" in r.getMessage() for r in caplog.records) == 1
    assert md.splitlines()[2].startswith("5 completed runs (4 language-model runs and 1 task run) from ")
    section = md.split("## Runs not in the table")[1].split("##")[0]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in section.splitlines() if line.startswith("| ") and "run_id" not in line}
    assert all(rows[f"broken{i}"][0].startswith("unreadable: ") for i in range(len(DAMAGES)))
    killed = next(r for r in rows.values() if r[0] == "incomplete")
    assert killed[1:] == ["alibi", "16", "0"]  # integers, not 16.0 and 0.0


def test_rows_recorded_for_an_encoding_their_variant_does_not_apply_to_are_named_and_left_out(runs, tmp_path,
                                                                                               monkeypatch, caplog):
    """Older code recorded logn rows for encodings where they equal the plain row (iRoPE, SSMax):
    the report asks the variant again, leaves them out of every table and names them."""
    from posbench.encodings.rope import RoPE

    rope = next(runs.glob("rope_*"))
    stale = [{**r, "variant": "rope+logn", "row": {"encoding": "rope", "tag": "", "variants": [{"variant": "logn"}]}}
             for r in RunDir(rope).read_metrics()["evaluations"] if r["variant"] == "rope"]
    RunDir(rope).write_metrics({**RunDir(rope).read_metrics(), "evaluations": RunDir(rope).read_metrics()["evaluations"] + stale})
    assert "rope+logn" in set(load_runs(runs).evals["variant"])  # logn applies to RoPE: kept
    monkeypatch.setattr(RoPE, "takes_row_temperature", lambda self: False)  # as if every layer had its own
    with caplog.at_level(logging.WARNING, logger="posbench"):
        md = report(runs, tmp_path / "rep")
    assert "rope+logn" not in md.split("## Records not compared")[0]
    assert "left out of every table and figure: `rope+logn`." in md
    assert sum("rope+logn" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("name", __import__("posbench.report.section", fromlist=["SECTIONS"]).SECTIONS.builtins())
def test_every_section_says_whether_it_applies_and_writes_only_the_files_it_declares(name, sweep_context, tmp_path):
    """Every built-in report section (one file each in posbench/report/sections/, or a topic package's
    posbench/report/<topic>/section.py, found by the registry, so a new one is tested here with no edit), on the shared sweep: it says whether it applies, and where
    it does it renders and writes only files it declares."""
    from posbench.report.section import SECTIONS
    from tests.helpers import run_section

    cls = SECTIONS.get(name)
    applies = cls().applies(sweep_context)
    assert isinstance(applies, bool)
    if applies:
        md, written = run_section(cls, sweep_context, tmp_path)
        assert set(written) <= {f.name for f in cls.files} and set(written) == {p.name for p in tmp_path.iterdir()
                                                                               if p.name in written}
