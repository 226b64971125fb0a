"""The training job (posbench/jobs/train.py): a re-run finishes evaluation instead of training again,
a kill during evaluation keeps the training, a malformed resume state is discarded, and a diverged
run is recorded and final unless retried."""

import json
import logging
import shutil

import pytest
import torch

from posbench.jobs.train import run
from posbench.store.rundir import RESUME, RunDir

BASE = ["model=tiny", "train=smoke", "train_len=16", "eval.protocols=[nonoverlapping]", "eval.scored_tokens=256", "data=local"]


def test_rerunning_a_complete_run_with_new_eval_settings_evaluates_what_is_missing(compose, tmp_path, text_corpus, caplog):
    cfg = compose("encoding=alibi", *BASE, "eval.multiples=[1,2]", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    run_dir = run(cfg)
    first = RunDir(run_dir).read_metrics()
    weights = (run_dir / "checkpoint.pt").read_bytes()
    cfg = compose("encoding=alibi", *BASE, "eval.multiples=[1,2,4]", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    with caplog.at_level(logging.INFO, logger="posbench"):
        run(cfg)
    assert any("1 new evaluation records" in r.getMessage() for r in caplog.records)
    after = RunDir(run_dir).read_metrics()
    assert (run_dir / "checkpoint.pt").read_bytes() == weights  # not trained again
    assert [r for r in after["evaluations"] if r["length"] <= 32] == first["evaluations"]  # old records untouched
    assert [r["length"] for r in after["evaluations"]] == [16, 32, 64]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="posbench"):
        run(cfg)  # nothing missing now
    assert any("already complete" in r.getMessage() for r in caplog.records)


def test_a_kill_during_evaluation_keeps_the_training(compose, tmp_path, text_corpus, monkeypatch):
    import posbench.jobs.train as train

    cfg = compose("encoding=rope", *BASE, "eval.multiples=[1,2]", f"data.path={text_corpus}", f"runs_dir={tmp_path}")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as if the process were stopped while evaluating

    monkeypatch.setattr(train, "evaluate_into", killed)
    with pytest.raises(KeyboardInterrupt):
        run(cfg)
    run_dir = cfg.run_dir
    m = RunDir(run_dir).read_metrics()
    assert m["status"] == "completed" and m["evaluations"] == [] and (run_dir / "checkpoint.pt").exists()
    weights = (run_dir / "checkpoint.pt").read_bytes()
    monkeypatch.undo()
    history = (run_dir / "history.json").read_text()
    run(cfg)  # evaluates the saved checkpoint; trains nothing
    assert (run_dir / "checkpoint.pt").read_bytes() == weights and (run_dir / "history.json").read_text() == history
    assert [r["length"] for r in RunDir(run_dir).read_metrics()["evaluations"]] == [16, 32]


def test_a_signal_in_the_last_step_saves_the_trained_run_then_stops_before_evaluating(compose, tmp_path, text_corpus,
                                                                                        monkeypatch):
    """A Ctrl-C in the last step cannot leave a resume state (the run is trained): the checkpoint and the
    metrics are written, then the command stops, and the next one only evaluates."""
    import os
    import signal

    import posbench.jobs.train as train
    from posbench.core.errors import Interrupted

    real = train.during_training_probe

    def signalling(*args, **kwargs):
        probe = real(*args, **kwargs)
        return lambda model: os.kill(os.getpid(), signal.SIGINT) or probe(model)

    monkeypatch.setattr(train, "during_training_probe", signalling)  # the probe of step 20 of 20 sends it
    cfg = compose("encoding=rope", *BASE, "eval.multiples=[1,2]", "eval.during_training=[1.0]",
                  f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    with pytest.raises(Interrupted) as stopped:
        run(cfg)
    assert stopped.value.line == ("posbench: interrupted (SIGINT) in the last step of 20 (train rope L=16); the training "
                                  "is complete and saved; run the same command again to go on")
    m = cfg.folder.read_metrics()
    assert m["status"] == "completed" and m["evaluations"] == [] and not (cfg.run_dir / RESUME).exists()
    weights = (cfg.run_dir / "checkpoint.pt").read_bytes()
    monkeypatch.undo()
    run(cfg)
    assert (cfg.run_dir / "checkpoint.pt").read_bytes() == weights and cfg.folder.read_metrics()["evaluations"]


def test_a_diverged_run_is_final_unless_retried(compose, tmp_path, text_corpus, caplog):
    args = ["encoding=nope", *BASE, "train.lr=1e12", "train.warmup_steps=1", "train.grad_clip=1e30",
            f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    run_dir = run(compose(*args))
    assert RunDir(run_dir).read_metrics()["status"] == "diverged"
    stamp = (run_dir / "metrics.json").stat().st_mtime_ns
    with caplog.at_level(logging.WARNING, logger="posbench"):
        run(compose(*args))
    assert any("diverged" in r.getMessage() and "retry_diverged=true" in r.getMessage() for r in caplog.records)
    assert (run_dir / "metrics.json").stat().st_mtime_ns == stamp
    run(compose(*args, "retry_diverged=true"))  # trained again (and, with this learning rate, diverges again)
    assert (run_dir / "metrics.json").stat().st_mtime_ns != stamp
    assert json.loads((run_dir / "metrics.json").read_text())["status"] == "diverged"


def test_a_new_evaluation_variant_on_a_complete_run_is_evaluated_not_retrained(compose, tmp_path, text_corpus):
    cfg = compose("encoding=rope", *BASE, "eval.multiples=[1,2]", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    run_dir = run(cfg)
    weights = (run_dir / "checkpoint.pt").read_bytes()
    run(compose("encoding=rope", *BASE, "eval.multiples=[1,2]", "eval.rope_scaling=[yarn]", f"data.path={text_corpus}",
                f"runs_dir={tmp_path}"))
    assert (run_dir / "checkpoint.pt").read_bytes() == weights
    assert {r["variant"] for r in RunDir(run_dir).read_metrics()["evaluations"]} == {"rope", "rope+yarn@2x"}


SMALL = ["model=tiny", "train_len=16", "train.batch_size=4", "train.warmup_steps=2", "train.log_every=5",
         "train.val_every=20", "train.val_batches=1", "eval.multiples=[1,2]", "eval.scored_tokens=128", "data=local"]


def test_a_malformed_resume_state_is_discarded_and_the_run_starts_over(compose, tmp_path, text_corpus, caplog):
    cfg = compose(*SMALL, "train.steps=10", f"data.path={text_corpus}", f"runs_dir={tmp_path / 'clean'}")
    clean = RunDir(run(cfg)).read_metrics()
    cfg = compose(*SMALL, "train.steps=10", f"data.path={text_corpus}", f"runs_dir={tmp_path / 'broken'}")
    run_dir = cfg.run_dir
    run_dir.mkdir(parents=True)
    # loadable, with every key, but of another model: applying it fails half-way
    torch.save({"model": {"tok_emb.weight": torch.zeros(3, 3)}, "optimizer": {}, "scheduler": {}, "torch_rng": torch.get_rng_state(),
                "next_step": 5, "history": [], "last_loss": 1.0, "val_loss": None, "train_wall_s": 0.0}, run_dir / RESUME)
    with caplog.at_level(logging.WARNING, logger="posbench"):
        m = RunDir(run(cfg)).read_metrics()
    assert any("discarding unusable resume state" in r.message for r in caplog.records)
    assert m["status"] == "completed" and not (run_dir / RESUME).exists()
    assert m["evaluations"] == clean["evaluations"]  # started over: the same bits as a clean run
    # a resume state that is not even a torch file
    shutil.rmtree(run_dir)
    run_dir.mkdir()
    (run_dir / RESUME).write_bytes(b"garbage")
    assert RunDir(run(cfg)).read_metrics()["evaluations"] == clean["evaluations"]


def test_divergence_is_recorded_not_raised(compose, tmp_path, text_corpus, caplog):
    cfg = compose("model=tiny", "train=smoke", "train_len=16", "train.lr=1e12", "train.warmup_steps=1", "train.grad_clip=1e30",
                  "data=local", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    m = RunDir(run(cfg)).read_metrics()
    assert m["status"] == "diverged" and m["evaluations"] == []
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="posbench"):
        run(cfg)  # again: skipped, saying why in numbers (the NaN loss is stored as null)
    assert [r.getMessage() for r in caplog.records] == [
        f"skipping {cfg.run_id}: it diverged (loss not finite at step {m['train_steps']}); runs that diverge are final "
        "(retry_diverged=true trains it again)"]


@pytest.mark.parametrize("overrides, message", [
    (["train.batch_size=6"], "train.batch_size=6 does not divide among 4 processes (WORLD_SIZE); use a multiple of 4"),
    (["train.schedule=wsd", "train.budgets=[20,40]", "train.warmup_steps=2"],
     "train.budgets does not train over several processes yet (WORLD_SIZE=4); run it in one process, or train its "
     "plain run with torchrun"),
])
def test_a_run_over_several_processes_that_cannot_split_is_refused_before_anything_is_written(
        entry, monkeypatch, tmp_path, text_corpus, overrides, message):
    """Under torchrun (WORLD_SIZE=4): a batch that does not divide, or budgets, is one line and exit 2,
    in every process, before any joins the process group or writes (posbench/training/parallel.py)."""
    from tests.conftest import tree

    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "0")
    code, err = entry("train", *BASE, f"data.path={text_corpus}", *overrides, f"runs_dir={tmp_path / 'runs'}")
    assert code == 2, err
    assert err.strip().splitlines() == [f"posbench: error: {message}"]
    assert tree(tmp_path) == []


def test_a_sweep_of_two_seeds_a_configuration_says_so_before_it_trains(compose):
    from posbench.jobs.train import two_seeds_note

    two = [compose(f"encoding={e}", "model=tiny", f"seed={s}") for e in ("rope", "alibi") for s in (0, 1)]
    note = two_seeds_note(two)
    assert note.startswith("2 seeds per configuration (seeds 0, 1)") and "1 degree of freedom" in note
    assert "(seed=0,1,2)" in note
    later = [compose(f"encoding={e}", "model=tiny", f"seed={s}") for e in ("rope", "alibi") for s in (3, 4)]
    assert "(seed=3,4,5)" in two_seeds_note(later)
    three = two + [compose(f"encoding={e}", "model=tiny", "seed=2") for e in ("rope", "alibi")]
    assert two_seeds_note(three) is None and two_seeds_note(two[:1]) is None
    assert two_seeds_note([compose("encoding=rope", "model=tiny", "seed=0"), compose("encoding=alibi", "model=tiny", "seed=0")]) is None


def test_a_finished_run_met_again_under_a_tracker_is_logged_not_skipped_in_silence(compose, tmp_path, text_corpus,
                                                                                   monkeypatch, caplog):
    """``logger=wandb`` on a run that is already complete: its training curve, final losses and records
    go to the tracker (a recording stand-in here), and the log says so."""
    import posbench.jobs.train as train
    from posbench.core.tracking import Tracker

    seen = []

    class Recording(Tracker):
        def log(self, metrics, step=None):
            seen.append(("log", step, metrics))

        def log_evaluation(self, records):
            seen.append(("eval", None, records))

        def finish(self):
            seen.append(("finish", None, None))

    run_dir = run(compose("encoding=alibi", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}"))
    monkeypatch.setattr(train, "make_tracker", lambda *a, **k: Recording())
    with caplog.at_level(logging.INFO, logger="posbench"):
        run(compose("encoding=alibi", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}", "logger=wandb"))
    metrics = RunDir(run_dir).read_metrics()
    steps = [s for kind, s, _ in seen if kind == "log" and s is not None]
    assert steps and steps == sorted(steps)  # the training curve, in order
    assert ("eval", None, metrics["evaluations"]) in seen and seen[-1][0] == "finish"
    assert any("logged the finished run" in r.getMessage() for r in caplog.records)
