"""A run killed with SIGKILL at any moment resumes and ends with the same bits as one never killed."""

import json
import os
import subprocess
import sys

import torch

from tests.helpers import kill_at

OVERRIDES = ["model=small", "train_len=32", "train.batch_size=16", "train.steps=120", "train.checkpoint_every=20",
             "train.warmup_steps=10", "train.log_every=5", "train.val_every=40", "train.val_batches=2",
             "eval.multiples=[1,4]", "eval.scored_tokens=256", "eval.during_training=[0.25,0.5,1.0]", "data=local"]


def start(runs_dir, corpus, log=False):
    """posbench-train in a process of its own; ``log``: its log (stdout and stderr together) on ``stdout``."""
    cmd = [sys.executable, "-m", "posbench.cli.train", *OVERRIDES, f"data.path={corpus}", f"runs_dir={runs_dir}"]
    out = subprocess.PIPE if log else subprocess.DEVNULL
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT if log else subprocess.PIPE, text=True,
                            env={**os.environ})


def test_kill_minus_nine_twice_then_resume_gives_identical_results(tmp_path, text_corpus, cache_dir):
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    assert start(clean, text_corpus).wait() == 0

    first = kill_at(start(killed, text_corpus), "*/resume.pt", killed, 40)
    second = kill_at(start(killed, text_corpus), "*/resume.pt", killed, first + 20)
    assert second > first  # the second process resumed rather than starting over
    (state,) = killed.glob("*/resume.pt")
    left_at = torch.load(state, weights_only=True)["next_step"]
    final = start(killed, text_corpus, log=True)
    log, _ = final.communicate()
    assert final.returncode == 0, log
    # the last process continued from the state the kill left (a run that discarded it and retrained from
    # step 0 would end with the same bits, and show nothing of the resume: the assertions below alone pass)
    assert left_at >= second and f"resuming from step {left_at} " in log, log[-2000:]
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


# -- a resume state that does not fit the run -------------------------------------------------------

SMALL = ["model=tiny", "train_len=16", "train.batch_size=4", "train.warmup_steps=2", "train.log_every=5",
         "train.val_every=20", "train.val_batches=1", "train.steps=10", "eval.multiples=[1,2]",
         "eval.scored_tokens=128", "data=local"]


def loadable_state(cfg, changes: dict) -> dict:
    """A resume state train_model could apply after 5 steps (this run's model, optimiser and
    schedule), with ``changes`` (``schedule_step``: the schedule's step count, else next_step's)."""
    from posbench.training.trainer import lr_factor, make_optimizer

    changes = dict(changes)
    next_step = changes.get("next_step", 5)
    schedule_step = changes.pop("schedule_step", next_step)
    model = cfg.build_model()
    opt = make_optimizer(model, cfg.train)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg.train))
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(),
             "scheduler": {**sched.state_dict(), "last_epoch": schedule_step}, "torch_rng": torch.get_rng_state(),
             "next_step": next_step, "history": [{"step": 5, "loss": 3.0}], "last_loss": 3.0, "val_loss": None,
             "probes": [], "train_wall_s": 1.0}
    return {**state, **changes}


BAD_STATES = {  # what is wrong -> the reason the warning gives
    "next_step beyond the budget": ({"next_step": 400, "history": []}, "next_step 400 is not inside this run's train.steps=10"),
    "next_step not the schedule's": ({"next_step": 7, "schedule_step": 5}, "next_step 7 does not match the schedule's step 5"),
    "history not a list": ({"history": 5}, "history is not a list of records (int)"),
    "history records without steps": ({"history": [{"loss": 1.0}]}, "history has a record without a step in 1..5"),
    "probes not a list": ({"probes": "x"}, "probes is not a list of records (str)"),
    "val_loss a string": ({"val_loss": "low"}, "val_loss 'low' is not a number"),
    "rng of another type": ({"torch_rng": torch.zeros(3)}, "torch_rng is not a torch RNG state"),
}


def test_a_resume_state_that_does_not_fit_the_run_is_discarded_and_the_run_is_bit_identical(compose, tmp_path,
                                                                                              text_corpus, caplog):
    import logging

    from posbench.jobs.train import run
    from posbench.store.rundir import RESUME

    clean = compose(*SMALL, f"data.path={text_corpus}", f"runs_dir={tmp_path / 'clean'}")
    run(clean)
    want = clean.folder.read_metrics()
    weights = torch.load(clean.run_dir / "checkpoint.pt", weights_only=True)["model"]
    for i, (damage, (changes, reason)) in enumerate(BAD_STATES.items()):
        cfg = compose(*SMALL, f"data.path={text_corpus}", f"runs_dir={tmp_path / str(i)}")
        cfg.run_dir.mkdir(parents=True)
        torch.save(loadable_state(cfg, changes), cfg.run_dir / RESUME)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="posbench"):
            run(cfg)
        warnings = [r.getMessage() for r in caplog.records if "resume state" in r.getMessage()]
        assert warnings == [f"discarding unusable resume state {cfg.run_dir / RESUME} (ValueError: {reason}); "
                            "training from step 0"], damage
        got = cfg.folder.read_metrics()
        assert got["status"] == "completed" and not (cfg.run_dir / RESUME).exists(), damage
        for key in ("evaluations", "final_train_loss", "final_val_loss", "train_steps", "train_tokens"):
            assert got[key] == want[key], (damage, key)
        w = torch.load(cfg.run_dir / "checkpoint.pt", weights_only=True)["model"]
        assert all(torch.equal(weights[k], w[k]) for k in weights), damage


def test_an_unusable_resume_state_or_snapshot_is_removed_with_a_warning(tmp_path, caplog):
    """read_state raises on what is not a resume state; RunDir and TrunkDir read None, say so, and
    remove the file so that training starts over (or the trunk makes the snapshot again)."""
    import logging

    import pytest

    from posbench.store.resume import read_state
    from posbench.store.rundir import RESUME, TrunkDir

    folder = TrunkDir(tmp_path)
    (tmp_path / RESUME).write_bytes(b"not a torch file")
    with pytest.raises(Exception):
        read_state(tmp_path / RESUME)
    with caplog.at_level(logging.WARNING, logger="posbench"):
        assert folder.load_resume() is None
    assert not folder.has_resume() and "discarding unusable resume state" in caplog.text
    folder.snapshot_path(4).parent.mkdir()
    torch.save({"next_step": 4}, folder.snapshot_path(4))
    assert folder.snapshot_steps() == [4] and folder.load_snapshot(4) is None and folder.snapshot_steps() == []
    assert folder.load_snapshot(8) is None  # none there: nothing to say
