"""The report as sections: each declares what it writes (the Files list and the removal of stale
files follow), each run's files are read once, rows take their style from their encoding, and
damaged runs or bad flags end in one line, never a traceback. Every report here is built from a
copy of the shared sweep's seed-0 runs (no training)."""

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import tree

from posbench.report.load import load_runs
from posbench.report.pipeline import build_report, sections
from posbench.report.section import SECTIONS, Output, Section, SectionOutput
from posbench.store.rundir import read_metrics, write_metrics


@pytest.fixture(scope="module")
def small_runs(sweep, tmp_path_factory) -> Path:
    """The shared sweep's seed-0 runs (5 encodings, three protocols, probes during training)."""
    runs, _, _ = sweep
    copy = tmp_path_factory.mktemp("small") / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    return copy


@pytest.fixture
def runs(small_runs, tmp_path) -> Path:
    """A copy of ``small_runs`` this test may damage."""
    return Path(shutil.copytree(small_runs, tmp_path / "runs"))


def report(runs_dir: Path, out: Path, **kw) -> str:
    return build_report(runs_dir, out, protocols=["nonoverlapping"], **kw).read_text()


def files_listed(md: str) -> list[str]:
    section = md.split("## Files")[1]
    return [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ") and "file " not in line]


# -- sections declare what they write ----------------------------------------------------------------


def test_the_files_list_is_what_the_report_folder_holds_and_every_file_is_declared(sweep_report):
    md = (sweep_report / "report.md").read_text()
    listed = files_listed(md)
    on_disk = sorted(p.name for p in sweep_report.iterdir() if p.name not in ("report.md", "report.html"))
    assert sorted(listed) == on_disk
    declared = [f for s in sections() for f in s.files]
    assert all(any(f.matches(name) for f in declared) for name in on_disk)
    for figure in (n for n in on_disk if n.endswith(".png")):
        assert f"]({figure})" in md  # every figure written is shown


class Extra(Section):
    """A plug-in section: one table, while --tolerance stays below 10%."""

    name = "extra"
    order = 85  # between loss by position (80) and training curves (90)
    files = (Output("extra_<n>.csv", "an extra table"),)

    def applies(self, ctx) -> bool:
        return ctx.options.tolerance < 0.1

    def build(self, ctx, out) -> list:
        from posbench.report.document import Heading, Para

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
        write_metrics(run_dir, {**read_metrics(run_dir), "during_training": []})
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
    write_metrics(task, {**read_metrics(task), "run_id": "task_run", "task": "passkey", "evaluations": []})
    with caplog.at_level(logging.WARNING, logger="posbench"):
        md = report(runs, tmp_path / "rep")
    for i in range(len(DAMAGES)):
        assert sum(f"broken{i}" in r.getMessage() for r in caplog.records) == 1
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
             for r in read_metrics(rope)["evaluations"] if r["variant"] == "rope"]
    write_metrics(rope, {**read_metrics(rope), "evaluations": read_metrics(rope)["evaluations"] + stale})
    assert "rope+logn" in set(load_runs(runs).evals["variant"])  # logn applies to RoPE: kept
    monkeypatch.setattr(RoPE, "takes_row_temperature", lambda self: False)  # as if every layer had its own
    with caplog.at_level(logging.WARNING, logger="posbench"):
        md = report(runs, tmp_path / "rep")
    assert "rope+logn" not in md.split("## Records not compared")[0]
    assert "left out of every table and figure: `rope+logn`." in md
    assert sum("rope+logn" in r.getMessage() for r in caplog.records) == 1


# -- bad flags and folders: one line, exit 2, nothing written ----------------------------------------


def run_report(capsys, *argv) -> tuple[int, str]:
    from posbench.cli.report import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in argv])
    return exc.value.code, capsys.readouterr().err


@pytest.fixture
def read_only(monkeypatch):
    """Make folders read-only for this process, as a read-only mount would (chmod does not stop
    root): creating a file or folder in one fails with EROFS."""
    folders: list[Path] = []
    real_open, real_mkdir = os.open, os.mkdir

    def inside(path) -> bool:
        p = Path(os.fsdecode(path)).absolute()
        return any(p == f or f in p.parents for f in folders)

    def refuse(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))

    def guarded_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and kwargs.get("dir_fd") is None and inside(path):
            refuse(path)
        return real_open(path, flags, *args, **kwargs)

    def guarded_mkdir(path, *args, **kwargs):
        if inside(path):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)
    monkeypatch.setattr(os, "mkdir", guarded_mkdir)
    return lambda folder: folders.append(Path(folder).absolute())


def test_bad_flags_are_one_line(small_runs, tmp_path, capsys):
    out = tmp_path / "rep"
    for argv, message in [
        (["--tolerance", "abc"], "argument --tolerance: invalid float value: 'abc' (posbench-report --help lists the flags)"),
        (["--threshold", "2"], "--threshold is an accuracy between 0 and 1 (a fraction such as 0.8), got 2.0"),
        (["--threshold", "-0.1"], "--threshold is an accuracy between 0 and 1 (a fraction such as 0.8), got -0.1"),
        (["--spread"], "argument --spread: expected one argument (posbench-report --help lists the flags)"),
    ]:
        code, err = run_report(capsys, small_runs, "--out", out, *argv)
        assert (code, err.splitlines()) == (2, [f"posbench: error: {message}"]), argv
    assert tree(tmp_path) == []


def test_an_out_that_is_a_file_is_one_line(small_runs, tmp_path, capsys):
    afile = tmp_path / "notes.txt"
    afile.write_text("mine")
    code, err = run_report(capsys, small_runs, "--out", afile)
    assert (code, err.splitlines()) == (2, [f"posbench: error: --out '{afile}' is a file; give a folder for the report"])
    code, err = run_report(capsys, small_runs, "--out", afile / "rep")
    assert (code, err.splitlines()) == (2, [f"posbench: error: cannot create the report folder '{afile / 'rep'}': "
                                            "Not a directory"])
    assert tree(tmp_path) == ["notes.txt"] and afile.read_text() == "mine"


def test_a_read_only_out_folder_or_runs_folder_is_one_line(runs, tmp_path, capsys, read_only):
    out = tmp_path / "rep"
    out.mkdir()
    read_only(out)
    code, err = run_report(capsys, runs, "--out", out, "--protocols", "nonoverlapping")
    assert (code, err.splitlines()) == (2, [f"posbench: error: cannot write the report into '{out}': Read-only file system"])
    assert tree(out) == []
    before = tree(runs)
    read_only(runs)  # the default report folder is RUNS_DIR/report
    code, err = run_report(capsys, runs, "--protocols", "nonoverlapping")
    assert (code, err.splitlines()) == (2, [f"posbench: error: cannot create the report folder '{runs / 'report'}': "
                                            "Read-only file system"])
    assert tree(runs) == before


def test_an_unwritable_home_gives_no_matplotlib_warnings(small_runs, tmp_path):
    home = tmp_path / "home"
    home.write_text("a file: nothing can be created below it")
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    proc = subprocess.run([sys.executable, "-m", "posbench.cli.report", str(small_runs), "--out", str(tmp_path / "rep"),
                           "--protocols", "nonoverlapping"], capture_output=True, text=True, env={**env, "HOME": str(home)},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == "", proc.stderr
    assert (tmp_path / "rep" / "ppl_vs_length.png").exists()


# -- style: from the encodings ----------------------------------------------------------------------

# the palette and families the report always had (figures.PALETTE / FAMILIES before the encodings carried them)
TAB20 = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896", "#9467bd", "#c5b0d5",
         "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7", "#bcbd22", "#dbdb8d", "#17becf", "#9edae5"]
HUES = ["blue", "orange", "green", "red", "purple", "brown", "pink", "grey", "olive", "cyan"]
OLD_PALETTE = {
    "rope": ("blue", 0), "rope+yarn": ("blue", 1), "rope+linear": ("orange", 0), "rope+dynamic_ntk": ("orange", 1),
    "xpos": ("cyan", 0), "rope+ntk": ("cyan", 1), "kerple_log": ("green", 0), "kerple_power": ("green", 1),
    "alibi": ("red", 0), "sandwich": ("red", 1), "t5": ("purple", 0), "fire": ("purple", 1),
    "sinusoidal": ("brown", 0), "sinusoidal_concat": ("brown", 1), "learned": ("pink", 0), "conv": ("pink", 1),
    "nope": ("grey", 0), "shaw": ("olive", 0), "transformer_xl": ("olive", 1),
}
OLD_FAMILIES = {
    "absolute / none": ["nope", "sinusoidal", "sinusoidal_concat", "learned", "conv"],
    "rotary": ["rope", "rope+linear", "rope+ntk", "rope+dynamic_ntk", "rope+yarn", "xpos"],
    "score bias": ["alibi", "sandwich", "kerple_log", "kerple_power", "t5", "fire"],
    "relative (content)": ["shaw", "transformer_xl"],
}


def test_built_in_rows_keep_their_colours_families_and_order():
    from posbench.encodings import available
    from posbench.report.style import DERIVED, families_in, row_order, row_style

    for name, (hue, light) in OLD_PALETTE.items():
        assert row_style(name).colour == TAB20[2 * HUES.index(hue) + light], name
    for family, members in OLD_FAMILIES.items():
        assert [row_style(m).family for m in members] == [family] * len(members)
        assert sorted(members, key=row_order) == members  # the order within the family
    assert set(m for ms in OLD_FAMILIES.values() for m in ms if "+" not in m) <= set(available())
    assert families_in(["shaw", "alibi", "rope", "nope"]) == list(OLD_FAMILIES)
    # the 2024-2026 recipes (issue 24) bring families of their own, after the old ones, and colours
    # of their own, none of them an old one's nor each other's
    new = ["layers", "rope_swa", "irope", "rnope_swa", "ssmax", "sink", "gated", "fox", "cope"]
    assert families_in(["nope", *new])[:1] == ["absolute / none"] and not set(families_in(new)) & set(OLD_FAMILIES)
    colours = [row_style(n).colour for n in new]
    assert len(set(colours)) == len(new) and not set(colours) & {row_style(m).colour for m in OLD_PALETTE}
    assert not set(colours) & set(DERIVED)  # tab20b stays for plug-ins' derived colours
    # evaluation-only rows and extension runs: the encoding's colour and family, their own line style
    for row, (like, style) in {"xpos+bca": ("xpos", "-."), "learned+randpos": ("learned", "-."),
                               "alibi+temp0.1": ("alibi", ":"), "rope+yarn@16x": ("rope+yarn", "-"),
                               "rope+yarn@4x+ft100": ("rope+yarn", "-"), "alibi@4x+ft0": ("alibi", "-")}.items():
        assert (row_style(row).colour, row_style(row).family, row_style(row).linestyle) == \
            (row_style(like).colour, row_style(like).family, style), row


def test_encodings_not_known_here_get_their_own_colour_and_column(monkeypatch):
    from posbench.report import style

    class Mamba:  # an installed plug-in of a family the report has never seen, no colour of its own
        family, colour, order = "state space", None, 0

    known = style._encoding_class
    monkeypatch.setattr(style, "_encoding_class", lambda name: Mamba if name == "mamba" else known(name))
    style.row_style.cache_clear()
    try:  # FAMILY_ORDER's families, then the others alphabetically, then "other" (not installed here)
        assert style.families_in(["gone", "mamba", "rope", "alibi"]) == ["rotary", "score bias", "state space", "other"]
        assert style.row_style("mamba").colour == style.derived_colour("mamba")
    finally:
        monkeypatch.undo()
        style.row_style.cache_clear()
    colours = {n: style.row_style(n).colour for n in ("gone", "mamba", "my_encoding", "rope+my_scaling")}
    assert all(c in style.DERIVED and c not in TAB20 for c in colours.values())  # tab20b: none of the built-ins'
    assert colours == {n: style.derived_colour(n) for n in colours}  # from the name alone: the same in every report
    assert style.row_style("gone").family == "other"


def test_row_names_are_read_in_one_place():
    from posbench.report.style import Extension, parse_row

    row = parse_row("rope+yarn@4x+ft100")
    assert (row.encoding, row.key, row.extension) == ("rope", "rope+yarn", Extension("rope", "yarn", 4.0, 100))
    assert parse_row("alibi@2.5x+ft0").extension == Extension("alibi", "plain", 2.5, 0)
    assert parse_row("xpos@4x+ft100+bca").extension is None  # an extension run's window variant: not its target row
    assert (parse_row("alibi+temp0.1").temperature, parse_row("xpos+bca").window) == (0.1, "bca")
    assert parse_row("rope@1.2.3x+ft1").extension is None


def test_a_run_scored_only_on_another_token_set_is_not_called_unevaluated(tmp_path):
    """Running the command again would only skip it: the label says where it was scored and how
    (or whether) it can be scored on the set this report compares."""
    from types import SimpleNamespace

    from posbench.report.sections.not_in_tables import NOT_EVALUATED, rows

    runs = pd.DataFrame([{"run_id": r, "status": "completed", "encoding": "rope", "train_len": 16, "seed": 0,
                          "run_dir": f"runs/{r}"} for r in ("other_corpus", "other_settings", "killed")])
    left_out = pd.DataFrame([
        {"run_id": "other_corpus", "variant": "rope", "protocol": "nonoverlapping", "token_set": "bbbb:segments[256]",
         "compared_set": "aaaa:segments[256]", "lengths": "16, 32"},
        {"run_id": "other_settings", "variant": "rope", "protocol": "nonoverlapping", "token_set": "aaaa:segments[512]",
         "compared_set": "aaaa:segments[256]", "lengths": "16, 32"}])
    ctx = SimpleNamespace(runs=runs, unevaluated=runs, left_out=left_out, runs_dir=tmp_path, skipped=[])
    status = dict(zip(rows(ctx)["run_id"], rows(ctx)["status"]))
    assert status == {
        "other_corpus": "evaluated on another corpus's token set (bbbb:segments[256]); trained on other text, it cannot "
                        "be scored on this one: report it with the runs of its corpus",
        "other_settings": "evaluated on another token set (aaaa:segments[512]); to score it on this one "
                          "(aaaa:segments[256]): posbench-eval run_dir=runs/other_settings with the eval.* settings of "
                          "the other runs",
        "killed": NOT_EVALUATED}
