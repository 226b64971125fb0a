"""posbench/store/lock.py: a second process on the same run skips it; two evaluations of one run at
once keep both records."""

import logging
import os
import shutil
import time

import numpy as np

from posbench.jobs.train import run
from posbench.store.rundir import RunDir

SMALL = ["model=tiny", "train_len=16", "train.batch_size=4", "train.warmup_steps=2", "train.log_every=5",
         "train.val_every=20", "train.val_batches=1", "eval.multiples=[1,2]", "eval.scored_tokens=128", "data=local"]


def test_a_second_process_on_the_same_run_skips_it(compose, tmp_path, text_corpus, caplog):
    cfg = compose(*SMALL, "train.steps=5", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    with cfg.folder.lock() as mine:  # another process holds the run
        assert mine
        with caplog.at_level(logging.WARNING, logger="posbench"):
            run_dir = run(cfg)
    assert any("another process" in r.message and f"pid {os.getpid()}" in r.message for r in caplog.records)
    assert not (run_dir / "metrics.json").exists() and not (run_dir / "config.yaml").exists()
    assert RunDir(run(cfg)).read_metrics()["status"] == "completed"  # once released, the run trains


def test_two_evaluations_of_one_run_at_once_keep_both_records(sweep, tmp_path, monkeypatch):
    import threading

    import posbench.jobs.evaluate as ev
    from posbench.core.device import Runtime
    from posbench.evaluation.settings import EvalConfig

    runs, _, _ = sweep
    run_dir = tmp_path / "run"
    shutil.copytree(next(runs.glob("rope_*s0_*")), run_dir)
    RunDir(run_dir).write_metrics({**RunDir(run_dir).read_metrics(), "evaluations": []})
    real = ev.evaluate_into

    def slow(*args, **kwargs):  # both have read metrics.json before either writes it
        out = real(*args, **kwargs)
        time.sleep(1.0)
        return out

    monkeypatch.setattr(ev, "evaluate_into", slow)
    errors = []

    def evaluate(protocol):
        try:
            ev.run(ev.EvalRequest(EvalConfig(multiples=[1, 2], protocols=[protocol], scored_tokens=512), str(run_dir), Runtime()))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=evaluate, args=(p,)) for p in ("nonoverlapping", "sliding")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    m = RunDir(run_dir).read_metrics()
    assert sorted({(e["protocol"], e["length"]) for e in m["evaluations"]}) == [
        ("nonoverlapping", 16), ("nonoverlapping", 32), ("sliding", 16), ("sliding", 32)]
    assert {k.split("/")[1] for k in np.load(run_dir / "per_position.npz").files} >= {"nonoverlapping", "sliding"}


def test_the_lock_file_names_its_holder_and_a_second_hold_gets_nothing(tmp_path):
    """flock locks an open file description: a second hold, even in this process, is refused, and
    is_free tells without taking the lock (nor creating a file where there is none)."""
    from posbench.store.lock import hold, holder, is_free

    path = tmp_path / "run" / ".lock"
    assert is_free(path) and not path.exists() and holder(path) == "?"
    with hold(path) as mine:
        assert mine and holder(path) == str(os.getpid()) and not is_free(path)
        with hold(path) as second:
            assert not second
    assert is_free(path) and RunDir(tmp_path / "run").lock_is_free()
