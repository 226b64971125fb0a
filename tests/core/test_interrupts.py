"""posbench/core/interrupts.py through the real command: a SIGINT or SIGTERM sent to ``posbench-train``
during training ends it with one line naming the step it resumes from (exit 130 or 143), a resume state
at that step (not the last periodic one), and the same command then ends with the bits of a run never
interrupted. The in-process twin, with the signal at an exact step, is in tests/training/test_trainer.py."""

import json
import os
import re
import signal
import subprocess
import sys

import pytest
import torch

from tests.helpers import kill_at

# 600 tiny steps (a few seconds), a periodic resume state every 7: the signal goes once the first is on
# disk, and lands some steps later, so the state it leaves is (almost always) at no multiple of 7
OVERRIDES = ["model=tiny", "train_len=16", "train.batch_size=4", "train.steps=600", "train.warmup_steps=5",
             "train.checkpoint_every=7", "train.log_every=5", "train.val_every=200", "train.val_batches=1",
             "eval.multiples=[1,2]", "eval.scored_tokens=128", "eval.protocols=[nonoverlapping]", "data=local"]


def start(runs_dir, corpus):
    cmd = [sys.executable, "-m", "posbench.cli.train", *OVERRIDES, f"data.path={corpus}", f"runs_dir={runs_dir}"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)


def finish(runs_dir, corpus):
    proc = start(runs_dir, corpus)
    assert proc.wait() == 0, proc.stderr.read()
    (run_dir,) = [p.parent for p in runs_dir.glob("*/metrics.json")]
    return run_dir


@pytest.fixture(scope="module")
def clean(tmp_path_factory, text_corpus, cache_dir):
    """The run never interrupted."""
    return finish(tmp_path_factory.mktemp("clean"), text_corpus)


# SIGINT's bit-for-bit resume is slow (the default run: SIGTERM here, and SIGINT's exit, line and resume in
# tests/cli/test_console.py; both signals reach the same handler, posbench/core/interrupts.py)
@pytest.mark.parametrize("signum", [pytest.param(signal.SIGINT, marks=pytest.mark.slow), signal.SIGTERM],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_command_saves_the_current_step_and_the_same_command_resumes_bit_for_bit(
        tmp_path, text_corpus, clean, signum):
    runs = tmp_path / "stopped"
    proc = start(runs, text_corpus)
    kill_at(proc, "*/resume.pt", runs, 7, sig=signum)
    err = proc.stderr.read()
    assert proc.returncode == 128 + signum, err
    last = err.strip().splitlines()[-1]
    name = signal.Signals(signum).name
    m = re.fullmatch(rf"posbench: interrupted \({name}\) after step (\d+) of 600 \(train rope L=16\); resume state "
                     r"saved; run the same command again to resume from step (\d+)", last)
    assert m and m.group(1) == m.group(2), last
    (resume,) = runs.glob("*/resume.pt")
    assert torch.load(resume, weights_only=True)["next_step"] == int(m.group(1)) >= 7
    assert not list(runs.rglob(".*.tmp")) and not (resume.parent / "metrics.json").exists()

    run_dir = finish(runs, text_corpus)
    assert run_dir.name == clean.name and not (run_dir / "resume.pt").exists()
    wa = torch.load(clean / "checkpoint.pt", weights_only=True)["model"]
    wb = torch.load(run_dir / "checkpoint.pt", weights_only=True)["model"]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    ma, mb = (json.loads((d / "metrics.json").read_text()) for d in (clean, run_dir))
    for key in ("evaluations", "final_train_loss", "final_val_loss", "train_steps", "train_tokens"):
        assert ma[key] == mb[key], key
    ha, hb = (json.loads((d / "history.json").read_text()) for d in (clean, run_dir))
    assert [h["loss"] for h in ha] == [h["loss"] for h in hb]


def test_a_stop_request_names_the_step_and_a_second_signal_stops_at_once():
    """The request itself (no process): the first signal is only noted; the interrupt it ends in names the
    step the run resumes from and exits as the shell expects (128 + signal); a second signal raises at once."""
    from posbench.core.errors import Interrupted
    from posbench.core.interrupts import StopRequest

    request = StopRequest("train rope L=16")
    assert not request.requested()
    request.handle(signal.SIGTERM, None)
    assert request.requested()
    stop = request.stop(44, 500, saved=True)
    assert "after step 44 of 500" in str(stop) and "resume from step 44" in str(stop)
    with pytest.raises(Interrupted, match="interrupted again"):
        request.handle(signal.SIGINT, None)
