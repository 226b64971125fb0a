"""The command lines' rough edges a new user meets: hints that keep Hydra's advice in one line,
``--version`` everywhere, Ctrl-C at any moment, and what each command prints where."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from conftest import cli, tree

from posbench.cli.console import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def here(tmp_path, cache_dir, monkeypatch):
    """A working folder that must stay empty: a refused command writes nothing."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- one line, with the fix ------------------------------------------------------------------------


@pytest.mark.parametrize("program, argv, expected", [
    ("train", ["encoding=rope,alibi"], "encoding=rope,alibi gives several values: add -m to run one job for each "
                                       "(posbench-train -m encoding=rope,alibi)"),
    ("train", ["eval.multiples=1,2"], "eval.multiples=1,2 gives several values: add -m to run one job for each "
                                      "(posbench-train -m eval.multiples=1,2); for a list value write eval.multiples=[1,2]"),
    ("eval", ["runs/abc"], "cannot parse override 'runs/abc': name the run as run_dir=runs/abc"),
    ("train", ["encoding=ALiBi"], "unknown encoding 'ALiBi' (did you mean alibi?); valid: "),
    ("train", ["model=tny"], "unknown model 'tny' (did you mean tiny?); valid: base, medium, small, tiny"),
    ("train", ["encoding=zzz"], "unknown encoding 'zzz'; valid: alibi, "),
])
def test_errors_keep_the_fix_in_their_one_line(entry, here, program, argv, expected):
    code, err = entry(program, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"posbench: error: {expected}"), err
    assert tree(here) == []


def test_did_you_mean_is_case_insensitive_and_quiet_without_a_close_name():
    from posbench.core.suggest import did_you_mean

    assert did_you_mean("ALiBi", ["alibi", "rope"]) == " (did you mean alibi?)"
    assert did_you_mean("ROPE", ["alibi", "rope", "p_rope"]) == " (did you mean rope or p_rope?)"
    assert did_you_mean("zzz", ["alibi", "rope"]) == ""


@pytest.mark.parametrize("entry_point", ["train", "evaluate", "report"])
def test_every_command_has_version(entry_point, monkeypatch, capsys):
    from posbench import __version__, console

    monkeypatch.setattr(sys, "argv", [f"posbench-{entry_point}", "--version"])
    with pytest.raises(SystemExit) as exc:
        getattr(console, entry_point)()
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"posbench {__version__} (torch ")


def test_console_scripts_are_the_thin_entries():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert scripts == {"posbench-train": "posbench.cli.console:train", "posbench-eval": "posbench.cli.console:evaluate",
                       "posbench.cli.report": "posbench.cli.console:report"}


# -- Ctrl-C at any moment --------------------------------------------------------------------------


def test_ctrl_c_while_the_command_imports_is_one_line_and_130(monkeypatch, capsys):
    from posbench.cli import console

    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(console, "import_module", interrupted)
    with pytest.raises(SystemExit) as exc:
        console.train()
    assert exc.value.code == 130
    assert capsys.readouterr().err.startswith("posbench: interrupted;")


def test_ctrl_c_in_the_first_second_through_a_real_interpreter(tmp_path, cache_dir):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # SIGINT at its default in the child: a shell without job control (CI, nohup, a background job)
    # starts its children with SIGINT ignored, and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen([sys.executable, "-c", "from posbench.cli.console import train; train()", "encoding=rope",
                             "train=smoke", "model=tiny"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(0.4)  # the interpreter is up; torch and Hydra are still loading
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == [err.strip()] and err.startswith("posbench: interrupted;"), err


# -- what each command prints where ----------------------------------------------------------------

TINY = ["model=tiny", "train=smoke", "train.steps=4", "train_len=16", "eval.multiples=[1,2]", "eval.scored_tokens=256",
        "data=local"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, text_corpus, cache_dir):
    """One tiny run trained through a real interpreter: (its directory, the command's output)."""
    runs = tmp_path_factory.mktemp("cli-runs")
    proc = cli("posbench.cli.train", *TINY, f"data.path={text_corpus}", f"runs_dir={runs}", cwd=runs)
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    return run_dir, proc


@pytest.fixture
def run_copy(tiny_run, tmp_path):
    import shutil

    shutil.copytree(tiny_run[0], tmp_path / "run")
    return tmp_path / "run"


def test_train_prints_one_result_line_per_run_on_stdout(tiny_run):
    run_dir, proc = tiny_run
    (line,) = proc.stdout.strip().splitlines()
    assert re.fullmatch(rf"{run_dir.name}  completed  ppl 1x=\d+\.\d\d 2x=\d+\.\d\d \(nonoverlapping\)  "
                        rf"{re.escape(str(run_dir))}", line), line


def test_eval_again_scores_only_what_is_new_and_prints_one_aligned_table(run_copy, tmp_path):
    first = cli("posbench.cli.evaluate", f"run_dir={run_copy}", "eval.multiples=[1,2]", "eval.scored_tokens=256", cwd=tmp_path)
    assert f"{run_copy.name}: already have 4 records; nothing new to score" in first.stderr
    assert "ppl:" not in first.stderr  # the scores are on stdout only, not logged again
    lines = first.stdout.strip().splitlines()
    assert lines[0].split() == ["variant", "protocol", "length", "multiple", "ppl", "tokens"] and len(lines) == 5
    assert len({len(line) for line in lines[1:]}) == 1  # aligned: every row as wide
    assert len({line.index(" 1x") if " 1x" in line else line.index(" 2x") for line in lines[1:]}) == 1
    more = cli("posbench.cli.evaluate", f"run_dir={run_copy}", "eval.multiples=[1,2,4]", "eval.scored_tokens=256", cwd=tmp_path)
    assert f"{run_copy.name}: already have 4 records; scoring 2 new" in more.stderr
    assert len(more.stdout.strip().splitlines()) == 7


def test_records_table_aligns_long_names_and_undefined_lengths():
    from posbench.jobs.records_table import records_table

    recs = [{"variant": "rope+dynamic_ntk", "protocol": "sliding", "length": 16, "multiple": 1.0, "ppl": 4.5,
             "tokens_scored": 256},
            {"variant": "learned", "protocol": "nonoverlapping", "length": 256, "multiple": 16.0, "ppl": None,
             "reason": "past its table", "tokens_scored": 0}]
    lines = records_table(recs, []).splitlines()
    assert lines == ["variant           protocol        length  multiple                   ppl  tokens",
                     "rope+dynamic_ntk  sliding             16        1x                 4.500     256",
                     "learned           nonoverlapping     256       16x  n/d (past its table)       0"]


# -- progress where stderr is not a terminal -------------------------------------------------------


def test_plain_progress_every_tenth_or_every_30_seconds(caplog):
    import logging

    from posbench.core.progress import PlainProgress

    now = [0.0]
    bar = PlainProgress(range(100), total=100, desc="train rope L=64", unit="step", clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="posbench"):
        for step in bar:
            now[0] += 0.1
            bar.set_postfix(loss=f"{2 - step / 100:.3f}", tok_s="1,000")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 10 and lines[0].startswith("train rope L=64: step 10/100 (10%), loss 1.910, 1,000 tokens/s, ETA 0:00:09")
    assert lines[-1] == "train rope L=64: step 100/100 (100%), loss 1.010, 1,000 tokens/s"
    caplog.clear()
    slow = PlainProgress(total=1000, desc="eval", unit="tok", clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="posbench"):
        for _ in range(3):
            now[0] += 31  # under a tenth each time, but 30 s have passed
            slow.update(1)
        slow.set_description("eval rope L=128")
    assert [r.getMessage() for r in caplog.records] == [
        "eval: tokens 1/1,000 (0%), ETA 8:36:09", "eval: tokens 2/1,000 (0%), ETA 8:35:38",
        "eval: tokens 3/1,000 (0%), ETA 8:35:07",
        "eval rope L=128: starting (0% of 1,000 tokens done)"]


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere(monkeypatch):
    from tqdm.auto import tqdm

    from posbench.core.progress import PlainProgress, progress

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert isinstance(progress(range(3), total=3), tqdm)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert isinstance(progress(range(3), total=3), PlainProgress)
    assert isinstance(progress(range(3), total=3, enabled=False), tqdm)  # disabled: tqdm's no-op


def test_a_command_in_a_pipe_logs_training_and_each_evaluation_length(tiny_run):
    _, proc = tiny_run
    assert "train rope L=16: step 4/4 (100%), loss " in proc.stderr, proc.stderr
    assert "eval rope L=16: starting" in proc.stderr and "eval rope L=32: starting" in proc.stderr
    assert "\r" not in proc.stderr  # no bar redrawn into a log file


# -- refusals that leave nothing behind ------------------------------------------------------------


@pytest.fixture
def in_runs(tiny_run, tmp_path):
    """A copy of the tiny run under its own name in a runs folder (so posbench-train finds it)."""
    import shutil

    run_dir = tmp_path / "runs" / tiny_run[0].name
    shutil.copytree(tiny_run[0], run_dir)
    return run_dir


def test_a_newer_metrics_schema_is_refused_by_every_command(entry, in_runs, text_corpus, tmp_path, monkeypatch, capsys):
    import json


    monkeypatch.chdir(tmp_path)
    metrics = in_runs / "metrics.json"
    metrics.write_text(json.dumps({**json.loads(metrics.read_text()), "schema_version": 2}))
    before = {p.name: p.read_bytes() for p in in_runs.iterdir()}
    expected = (f"posbench: error: {metrics} has schema_version 2, newer than posbench 0.1.0 reads (schema_version 1); "
                "upgrade posbench to work on this run")
    for program, argv in [("eval", [f"run_dir={in_runs}"]),
                          ("train", [*TINY, f"data.path={text_corpus}", f"runs_dir={in_runs.parent}"])]:
        code, err = entry(program, *argv)
        assert code == 2 and err.strip() == expected, (program, err)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        report([str(in_runs.parent), "--out", str(tmp_path / "report")])
    assert exc.value.code == 2 and capsys.readouterr().err.strip() == expected
    assert {p.name: p.read_bytes() for p in in_runs.iterdir()} == before


def test_eval_refusing_an_unfinished_run_leaves_no_lock(entry, tiny_run, tmp_path, monkeypatch):
    import shutil

    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(tiny_run[0] / "config.yaml", run_dir)  # started, killed before metrics.json
    code, err = entry("eval", f"run_dir={run_dir}")
    assert code == 2 and err.strip() == (f"posbench: error: {run_dir} has no metrics.json: its training has not finished "
                                         "(posbench-train resumes it)")
    assert tree(tmp_path) == ["run", "run/config.yaml"]


def test_eval_says_when_the_validation_set_is_small(run_copy, tmp_path):
    proc = cli("posbench.cli.evaluate", f"run_dir={run_copy}", "eval.multiples=[1,2]", "eval.scored_tokens=null", cwd=tmp_path)
    (line,) = [x for x in proc.stderr.splitlines() if "small validation set" in x]
    assert re.search(r"small validation set: [\d,]+ tokens scored at each length \(in \d+ documents\), fewer than 10,000",
                     line), line
