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
    from posbench.suggest import did_you_mean

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
    assert scripts == {"posbench-train": "posbench.console:train", "posbench-eval": "posbench.console:evaluate",
                       "posbench-report": "posbench.console:report"}


# -- Ctrl-C at any moment --------------------------------------------------------------------------


def test_ctrl_c_while_the_command_imports_is_one_line_and_130(monkeypatch, capsys):
    from posbench import console

    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(console, "import_module", interrupted)
    with pytest.raises(SystemExit) as exc:
        console.train()
    assert exc.value.code == 130
    assert capsys.readouterr().err.startswith("posbench: interrupted;")


def test_ctrl_c_in_the_first_second_through_a_real_interpreter(tmp_path, cache_dir):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", "from posbench.console import train; train()", "encoding=rope"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
    proc = cli("posbench.train", *TINY, f"data.path={text_corpus}", f"runs_dir={runs}", cwd=runs)
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
    first = cli("posbench.evaluate", f"run_dir={run_copy}", "eval.multiples=[1,2]", "eval.scored_tokens=256", cwd=tmp_path)
    assert f"{run_copy.name}: already have 4 records; nothing new to score" in first.stderr
    assert "ppl:" not in first.stderr  # the scores are on stdout only, not logged again
    lines = first.stdout.strip().splitlines()
    assert lines[0].split() == ["variant", "protocol", "length", "multiple", "ppl", "tokens"] and len(lines) == 5
    assert len({len(line) for line in lines[1:]}) == 1  # aligned: every row as wide
    assert len({line.index(" 1x") if " 1x" in line else line.index(" 2x") for line in lines[1:]}) == 1
    more = cli("posbench.evaluate", f"run_dir={run_copy}", "eval.multiples=[1,2,4]", "eval.scored_tokens=256", cwd=tmp_path)
    assert f"{run_copy.name}: already have 4 records; scoring 2 new" in more.stderr
    assert len(more.stdout.strip().splitlines()) == 7


def test_records_table_aligns_long_names_and_undefined_lengths():
    from posbench.records_table import records_table

    recs = [{"variant": "rope+dynamic_ntk", "protocol": "sliding", "length": 16, "multiple": 1.0, "ppl": 4.5,
             "tokens_scored": 256},
            {"variant": "learned", "protocol": "nonoverlapping", "length": 256, "multiple": 16.0, "ppl": None,
             "reason": "past its table", "tokens_scored": 0}]
    lines = records_table(recs, []).splitlines()
    assert lines == ["variant           protocol        length  multiple                   ppl  tokens",
                     "rope+dynamic_ntk  sliding             16        1x                 4.500     256",
                     "learned           nonoverlapping     256       16x  n/d (past its table)       0"]
