"""A run killed with SIGKILL at any moment resumes and ends with the same bits as one never killed."""

import json
import os
import signal
import subprocess
import sys
import time

import torch

OVERRIDES = ["model=small", "train_len=32", "train.batch_size=16", "train.steps=120", "train.checkpoint_every=20",
             "train.warmup_steps=10", "train.log_every=5", "train.val_every=40", "train.val_batches=2",
             "eval.multiples=[1,4]", "eval.scored_tokens=256", "eval.during_training=[0.25,0.5,1.0]", "data=local"]


def start(runs_dir, corpus):
    cmd = [sys.executable, "-m", "posbench.train", *OVERRIDES, f"data.path={corpus}", f"runs_dir={runs_dir}"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ})


def kill_after_step(proc, runs_dir, min_step, timeout=120.0) -> int:
    """SIGKILL the run once its resume state has reached min_step; returns the step it had."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for f in runs_dir.glob("*/resume.pt"):
            try:
                step = torch.load(f, weights_only=True)["next_step"]
            except Exception:  # being replaced right now
                continue
            if step >= min_step:
                assert proc.poll() is None, "the run finished before it could be killed"
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                return step
        time.sleep(0.02)
    raise AssertionError(f"no resume state at step >= {min_step}: {proc.stderr.read() if proc.poll() is not None else ''}")


def test_kill_minus_nine_twice_then_resume_gives_identical_results(tmp_path, text_corpus, cache_dir):
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    assert start(clean, text_corpus).wait() == 0

    first = kill_after_step(start(killed, text_corpus), killed, 40)
    second = kill_after_step(start(killed, text_corpus), killed, first + 20)
    assert second > first  # the second process resumed rather than starting over
    final = start(killed, text_corpus)
    assert final.wait() == 0, final.stderr.read()

    (a,), (b,) = list(clean.glob("*/metrics.json")), list(killed.glob("*/metrics.json"))
    assert a.parent.name == b.parent.name  # same config, same run id
    ma, mb = json.loads(a.read_text()), json.loads(b.read_text())
    assert mb["status"] == "completed" and not (b.parent / "resume.pt").exists()
    for key in ("evaluations", "during_training", "final_train_loss", "final_val_loss", "train_steps", "train_tokens"):
        assert ma[key] == mb[key], key
    ha, hb = json.loads((a.parent / "history.json").read_text()), json.loads((b.parent / "history.json").read_text())
    assert [h["loss"] for h in ha] == [h["loss"] for h in hb]
    wa = torch.load(a.parent / "checkpoint.pt", weights_only=True)["model"]
    wb = torch.load(b.parent / "checkpoint.pt", weights_only=True)["model"]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
