"""posbench/cli/console.py: the thin console entries, ``--version`` everywhere, and Ctrl-C at any
moment (while the command imports, and mid-run, which resumes) is one line and exit status 130."""

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from posbench.store.rundir import RESUME, RunDir
from tests.conftest import cli

SMALL = ["model=tiny", "train_len=16", "train.batch_size=4", "train.warmup_steps=2", "train.log_every=5",
         "train.val_every=20", "train.val_batches=1", "eval.multiples=[1,2]", "eval.scored_tokens=128", "data=local"]


def test_ctrl_c_exits_130_with_one_line_and_the_run_resumes(tmp_path, text_corpus, cache_dir):
    args = [*SMALL, "train.steps=500", "train.checkpoint_every=5", f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    # A shell that starts the test suite in the background (CI runners, `cmd &`) hands its children
    # SIGINT ignored, and Python then installs no KeyboardInterrupt handler: restore the default,
    # as a terminal's foreground job has it.
    proc = subprocess.Popen([sys.executable, "-m", "posbench.cli.train", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while not list(tmp_path.glob(f"*/{RESUME}")) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=60)[1]
    assert proc.returncode == 130, err[-2000:]
    # the step it stopped after, saved then (posbench/core/interrupts.py), not the last multiple of 5
    (resume,) = tmp_path.glob(f"*/{RESUME}")
    step = torch.load(resume, weights_only=True)["next_step"]  # whole and loadable
    assert err.strip().splitlines()[-1] == (f"posbench: interrupted (SIGINT) after step {step} of 500 (train rope L=16); "
                                            f"resume state saved; run the same command again to resume from step {step}")
    assert "Traceback" not in err
    assert step >= 5 and not (resume.parent / "metrics.json").exists()
    proc = cli("posbench.cli.train", *args)  # the same command again continues where it stopped
    assert "resuming from step" in proc.stderr
    assert RunDir(resume.parent).read_metrics()["status"] == "completed" and not resume.exists()


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("entry_point", ["train", "evaluate", "report", "eval_hf", "export"])
def test_every_command_has_version(entry_point, monkeypatch, capsys):
    from posbench import __version__
    from posbench.cli import console

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
                       "posbench-report": "posbench.cli.console:report",
                       "posbench-records": "posbench.cli.console:records",
                       "posbench-eval-hf": "posbench.cli.console:eval_hf", "posbench-export": "posbench.cli.console:export"}


@pytest.mark.parametrize("command", ["posbench-train", "posbench-eval", "posbench-report", "posbench-records",
                                     "posbench-eval-hf", "posbench-export"])
def test_the_installed_commands_run(command):
    """The scripts pip wrote for this interpreter still reach their entries (an install older than a
    moved module leaves scripts that fail on import: reinstall with scripts/setup.sh)."""
    exe = os.path.join(os.path.dirname(sys.executable), command)
    if not os.path.exists(exe):
        pytest.skip(f"{command} is not installed beside {sys.executable}")
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.startswith("posbench "), (
        f"{exe} --version: {proc.stderr.strip().splitlines()[-1:] or proc.returncode} (reinstall: bash scripts/setup.sh)")


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


def test_ctrl_c_swallowed_inside_an_import_still_stops_before_any_work(monkeypatch, capsys):
    """A third-party import that catches the KeyboardInterrupt whole leaves no error behind; the command
    must not run anyway (seen under load: the run trained and evaluated, exit 0)."""
    import types

    from posbench.cli import console
    from posbench.core import errors

    ran = []

    def swallowed(name):
        errors._interrupted = True  # what the handler records before the import swallows its raise
        return types.SimpleNamespace(main=lambda: ran.append(name))

    monkeypatch.setattr(console, "import_module", swallowed)
    monkeypatch.setattr(errors, "_interrupted", False)
    with pytest.raises(SystemExit) as exc:
        console.train()
    assert exc.value.code == 130 and ran == []
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


def test_an_interrupt_that_surfaces_as_another_error_is_still_one_line_and_130(monkeypatch, capsys):
    """A Ctrl-C inside a third-party import can be swallowed there and leave the module half-made, so the
    error that reaches posbench is another one (a RecursionError in numpy's lazy attributes was seen 0.4 s
    after start): remembered by the handler, it is reported as the interrupt. Without a Ctrl-C the same
    error is a bug and keeps its traceback."""
    import signal

    from posbench.core import errors

    monkeypatch.setattr(errors, "_interrupted", False)

    def import_that_swallows_the_interrupt():
        try:
            errors._on_sigint(signal.SIGINT, None)
        except KeyboardInterrupt:
            pass
        raise RecursionError("maximum recursion depth exceeded")

    with pytest.raises(SystemExit) as exc, errors.user_errors():
        import_that_swallows_the_interrupt()
    assert exc.value.code == 130 and capsys.readouterr().err.startswith("posbench: interrupted;")
    monkeypatch.setattr(errors, "_interrupted", False)
    with pytest.raises(RecursionError), errors.user_errors():
        raise RecursionError("a bug")


def test_a_reader_that_goes_away_ends_a_command_without_a_traceback(tmp_path):
    """A command printing into a pipe whose reader closed (`posbench-report ... | head`, a study
    script stopped while posbench-records printed its line) exits 141, as a shell reports a writer
    killed by SIGPIPE, with nothing on stderr."""
    (tmp_path / "loud.py").write_text("def main():\n    for _ in range(100_000):\n        print('x' * 100)\n")
    code = "from posbench.cli.console import _run; _run('loud')"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])})
    proc.stdout.read(10)
    proc.stdout.close()  # the reader goes away while the command still prints
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and err == ""


def test_a_last_line_still_buffered_when_the_reader_went_away_is_quiet_too(tmp_path):
    """One short line (posbench-records' summary inside a study script's `$(...)`) stays in Python's buffer
    until the command returns: its flush meets the gone reader inside posbench's handling, 141 and nothing
    on stderr, not Python's own flush at exit (exit 120 and "Exception ignored"). Buffered output is the
    default for a pipe, so PYTHONUNBUFFERED is taken away here."""
    (tmp_path / "late.py").write_text("import time\ndef main():\n    time.sleep(1)\n    print('one line')\n")
    # --version prints its line and leaves by sys.exit(0): the same buffered line, after a SystemExit
    (tmp_path / "late_exit.py").write_text("import sys, time\ndef main():\n    time.sleep(1)\n    print('v 1')\n    sys.exit(0)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    for module in ("late", "late_exit"):
        code = f"from posbench.cli.console import _run; _run('{module}')"
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**env, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])})
        proc.stdout.close()  # the reader goes away before the line is written
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 141 and err == "", (module, err)


def test_a_broken_pipe_of_the_command_s_own_is_still_a_traceback(tmp_path):
    """Only stdout's reader going away is quiet: a pipe the command itself opened and broke (a
    subprocess that exited) is a fault, shown as one."""
    (tmp_path / "own_pipe.py").write_text(
        "import os\ndef main():\n    r, w = os.pipe()\n    os.close(r)\n    os.write(w, b'x')\n")
    code = "from posbench.cli.console import _run; _run('own_pipe')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}, timeout=60)
    assert proc.returncode == 1 and "BrokenPipeError" in proc.stderr
