"""posbench/cli/report.py: bad flags and folders are one line, exit status 2, nothing written."""

import errno
import os
from pathlib import Path

import pytest

from tests.conftest import tree


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


def test_a_comparison_of_a_row_the_report_lacks_is_one_line_and_writes_nothing(capsys, sweep, tmp_path):
    runs, _, _ = sweep
    code, err = run_report(capsys, runs, "--out", tmp_path / "out", "--compare", "rope,alibbi")
    assert code == 2 and err.strip() == ("posbench: error: --compare: no row 'alibbi' in this report (did you mean alibi?); "
                                         "valid: alibi, learned, nope, rope, sinusoidal")
    code, err = run_report(capsys, runs, "--out", tmp_path / "out", "--baseline", "ropee")
    assert code == 2 and err.startswith("posbench: error: --baseline: no row 'ropee' in this report (did you mean rope")
    assert tree(tmp_path / "out") == []


def test_a_forecast_the_runs_cannot_give_is_one_line_and_writes_nothing(small_runs, tmp_path, capsys):
    out = tmp_path / "rep"
    code, err = run_report(capsys, small_runs, "--out", out, "--forecast", "size=2")
    assert (code, err.splitlines()) == (2, ["posbench: error: --forecast 'size=2': give AXIS=VALUE with AXIS one of "
                                            "train_len, params, rope_base, budget_steps (e.g. --forecast train_len=512)"])
    code, err = run_report(capsys, small_runs, "--out", out, "--forecast", "train_len=1024")
    assert code == 2 and err.splitlines() == ["posbench: error: --forecast train_len=1024: a forecast along the training "
                                              "length needs a line of at least 3 points; these runs have 0 at most on "
                                              "any line"]
    assert tree(tmp_path) == []
