"""The command lines' rough edges a new user meets: hints that keep Hydra's advice in one line,
``--version`` everywhere, Ctrl-C at any moment, and what each command prints where."""

import os
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
