"""Faults a long sweep meets: Ctrl-C, a corrupt resume state, two processes on one run, edited data,
a shared cache, binary input, and run directories a report cannot read."""

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from conftest import cli

from posbench.data.corpus import DataConfig
from posbench.data.load import load_corpus
from posbench.jobs.train import run
from posbench.store.lock import run_lock
from posbench.store.rundir import RESUME, read_metrics

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
    assert err.strip().splitlines()[-1] == ("posbench: interrupted; run the same command again to resume (unfinished runs "
                                            "continue from their last resume state)")
    assert "Traceback" not in err
    (resume,) = tmp_path.glob(f"*/{RESUME}")
    step = torch.load(resume, weights_only=True)["next_step"]  # whole and loadable
    assert step >= 5 and not (resume.parent / "metrics.json").exists()
    proc = cli("posbench.cli.train", *args)  # the same command again continues where it stopped
    assert "resuming from step" in proc.stderr
    assert read_metrics(resume.parent)["status"] == "completed" and not resume.exists()


def test_a_malformed_resume_state_is_discarded_and_the_run_starts_over(compose, tmp_path, text_corpus, caplog):
    cfg = compose(*SMALL, "train.steps=10", f"data.path={text_corpus}", f"runs_dir={tmp_path / 'clean'}")
    clean = read_metrics(run(cfg))
    cfg = compose(*SMALL, "train.steps=10", f"data.path={text_corpus}", f"runs_dir={tmp_path / 'broken'}")
    run_dir = cfg.run_dir
    run_dir.mkdir(parents=True)
    # loadable, with every key, but of another model: applying it fails half-way
    torch.save({"model": {"tok_emb.weight": torch.zeros(3, 3)}, "optimizer": {}, "scheduler": {}, "torch_rng": torch.get_rng_state(),
                "next_step": 5, "history": [], "last_loss": 1.0, "val_loss": None, "train_wall_s": 0.0}, run_dir / RESUME)
    with caplog.at_level(logging.WARNING, logger="posbench"):
        m = read_metrics(run(cfg))
    assert any("discarding unusable resume state" in r.message for r in caplog.records)
    assert m["status"] == "completed" and not (run_dir / RESUME).exists()
    assert m["evaluations"] == clean["evaluations"]  # started over: the same bits as a clean run
    # a resume state that is not even a torch file
    shutil.rmtree(run_dir)
    run_dir.mkdir()
    (run_dir / RESUME).write_bytes(b"garbage")
    assert read_metrics(run(cfg))["evaluations"] == clean["evaluations"]


def test_a_second_process_on_the_same_run_skips_it(compose, tmp_path, text_corpus, caplog):
    cfg = compose(*SMALL, "train.steps=5", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    with run_lock(cfg.run_dir) as mine:  # another process holds the run
        assert mine
        with caplog.at_level(logging.WARNING, logger="posbench"):
            run_dir = run(cfg)
    assert any("another process" in r.message and f"pid {os.getpid()}" in r.message for r in caplog.records)
    assert not (run_dir / "metrics.json").exists() and not (run_dir / "config.yaml").exists()
    assert read_metrics(run(cfg))["status"] == "completed"  # once released, the run trains


def test_the_corpus_cache_is_keyed_on_content(tmp_path, cache_dir):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        (docs / f"d{i}.txt").write_text(f"document {i} " * 50)
    cfg = DataConfig(name="edit", source="local", path=str(docs), cache_dir=str(cache_dir), val_fraction=0.2)
    a = load_corpus(cfg)
    (docs / "d0.txt").write_text((docs / "d0.txt").read_text().replace("document", "DOCUMENT"))  # same size
    b = load_corpus(cfg)
    assert a.fingerprint["bytes"] == b.fingerprint["bytes"] and a.fingerprint["hash"] != b.fingerprint["hash"]
    assert b"DOCUMENT" in bytes(np.concatenate([b.train, b.val])) and b"DOCUMENT" not in bytes(np.concatenate([a.train, a.val]))


def test_binary_files_are_read_with_a_warning_naming_the_share(tmp_path, cache_dir, caplog):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "text.txt").write_text("plain text " * 300)
    (docs / "blob.txt").write_bytes(bytes(range(128, 256)) * 20)  # 2560 bytes that are not UTF-8
    with caplog.at_level(logging.WARNING, logger="posbench"):
        load_corpus(DataConfig(name="bin", source="local", path=str(docs), cache_dir=str(cache_dir)))
    (msg,) = [r.getMessage() for r in caplog.records if "not UTF-8" in r.getMessage()]
    assert msg.startswith(f"43.69% of the bytes under {docs} are not UTF-8 text (2560 bytes: binary files?)")


def test_files_and_folders_follow_the_umask(tmp_path, text_corpus):
    cache = tmp_path / "cache"
    argv = ["posbench-train", *SMALL, "train.steps=2", f"data.path={text_corpus}", f"data.cache_dir={cache}",
            f"runs_dir={tmp_path / 'runs'}"]
    code = f"import os, sys; os.umask(0o002); sys.argv = {argv!r}; from posbench.cli.train import main; main()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    (entry,) = cache.iterdir()
    for folder in (run_dir, entry):
        assert folder.stat().st_mode & 0o777 == 0o775, folder
    for f in [*run_dir.iterdir(), *entry.iterdir()]:
        assert f.stat().st_mode & 0o777 == 0o664, f  # group-readable and -writable, as the umask says


def test_divergence_is_recorded_not_raised(compose, tmp_path, text_corpus, caplog):
    cfg = compose("model=tiny", "train=smoke", "train_len=16", "train.lr=1e12", "train.warmup_steps=1", "train.grad_clip=1e30",
                  "data=local", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    m = read_metrics(run(cfg))
    assert m["status"] == "diverged" and m["evaluations"] == []
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="posbench"):
        run(cfg)  # again: skipped, saying why in numbers (the NaN loss is stored as null)
    assert [r.getMessage() for r in caplog.records] == [
        f"skipping {cfg.run_id}: it diverged (loss not finite at step {m['train_steps']}); runs that diverge are final "
        "(retry_diverged=true trains it again)"]


@pytest.mark.parametrize("damage", ["no config.yaml", "corrupt per_position.npz", "corrupt history.json",
                                    "metrics of the wrong shape", "metrics torn"])
def test_report_skips_an_unreadable_run_and_lists_it(sweep, tmp_path, damage, caplog):
    from posbench.report.pipeline import build_report

    runs, _, _ = sweep
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    bad = next(copy.glob("rope_*"))
    if damage == "no config.yaml":
        (bad / "config.yaml").unlink()
    elif damage == "corrupt per_position.npz":
        (bad / "per_position.npz").write_bytes(b"PK\x03\x04garbage")
    elif damage == "corrupt history.json":
        (bad / "history.json").write_text('{"step": ')
    elif damage == "metrics of the wrong shape":
        (bad / "metrics.json").write_text(json.dumps({"status": "completed", "evaluations": "all good"}))
    else:
        (bad / "metrics.json").write_text('{"status": "compl')
    with caplog.at_level(logging.WARNING, logger="posbench"):
        build_report(copy, tmp_path / "rep", protocols=["nonoverlapping"])
    assert any(f"skipping run {bad}" in r.getMessage() for r in caplog.records)
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "rope" not in set(__import__("pandas").read_csv(tmp_path / "rep" / "table.csv")["variant"])
    section = md.split("## Runs not in the table")[1]
    assert bad.name in section and "unreadable" in section


# -- the corpus a run was made from ---------------------------------------------------------------


def test_a_run_of_a_corpus_edited_since_is_refused_not_skipped(entry, compose, tmp_path, cache_dir, monkeypatch):
    """The identical command after an edit of the corpus: one line naming both hashes and what to
    do, for the complete run (posbench-train would skip it, posbench-eval score it on the new
    text) and for a run killed before its metrics (it would resume on the new text)."""
    import re

    from conftest import tree, write_text_corpus

    monkeypatch.chdir(tmp_path)
    docs = write_text_corpus(tmp_path / "docs", n_docs=20)
    args = [*SMALL, "train.steps=5", f"data.path={docs}", f"runs_dir={tmp_path / 'runs'}"]
    cfg = compose(*args)
    run(cfg)
    old = read_metrics(cfg.run_dir)["corpus"]["hash"]
    text = (docs / "doc003.txt").read_text()
    (docs / "doc003.txt").write_text(text.replace("alpha", "ALPHA"))  # same size, other content
    files = {p: p.read_bytes() for p in cfg.run_dir.iterdir() if p.is_file() and p.name != ".lock"}
    cache = tree(cache_dir)
    expected = re.compile(
        rf"posbench: error: run {cfg.run_id} was trained on corpus 'local' with hash {old}; data.path={docs} now gives "
        rf"hash (?!{old})[0-9a-f]{{16}} \(same size, other content\); its results belong to the old corpus: train it in "
        rf"a new runs_dir, or delete {re.escape(str(cfg.run_dir))} to train it again")
    for program, argv in [("train", args), ("eval", [f"run_dir={cfg.run_dir}", "eval.multiples=[1]"])]:
        code, err = entry(program, *argv)
        assert code == 2 and len(err.splitlines()) == 1 and expected.fullmatch(err.strip()), (program, err)
    assert {p: p.read_bytes() for p in cfg.run_dir.iterdir() if p.is_file() and p.name != ".lock"} == files
    assert tree(cache_dir) == cache  # the new corpus's token cache, built to compare, is removed with the refusal
    (cfg.run_dir / "metrics.json").unlink()  # killed before the end: its corpus.json says what it started on
    code, err = entry("train", *args)
    assert code == 2 and expected.fullmatch(err.strip()), err
    (docs / "doc003.txt").write_text(text)  # the corpus as it was: the run trains (resumes) again
    assert read_metrics(run(cfg))["corpus"]["hash"] == old


def test_a_stdlib_run_of_another_python_is_refused(tmp_path):
    from posbench.core.errors import PosbenchError
    from posbench.data.corpus import Corpus
    from posbench.jobs.corpora import check_same_corpus
    from posbench.store.rundir import write_corpus

    write_corpus(tmp_path, {"name": "stdlib", "source": "stdlib", "python": "3.10.4", "documents": 1890, "hash": "a" * 16})
    now = Corpus(np.zeros(4, np.uint8), np.zeros(4, np.uint8),
                 {"name": "stdlib", "source": "stdlib", "python": "3.11.7", "documents": 1890, "hash": "b" * 16})
    with pytest.raises(PosbenchError) as e:
        check_same_corpus(tmp_path, now)
    assert str(e.value) == (f"run {tmp_path.name} was trained on corpus 'stdlib' with hash {'a' * 16}; the standard library "
                            f"of Python 3.11.7 now gives hash {'b' * 16} (Python 3.10.4 -> 3.11.7); its results belong to the "
                            f"old corpus: train it in a new runs_dir, or delete {tmp_path} to train it again")
    check_same_corpus(tmp_path, Corpus(now.train, now.val, {**now.fingerprint, "hash": "a" * 16}))  # the same: passes


# -- two evaluations of one run at once -------------------------------------------------------------


def test_two_evaluations_of_one_run_at_once_keep_both_records(sweep, tmp_path, monkeypatch):
    import threading

    import posbench.jobs.evaluate as ev
    from posbench.core.device import Runtime
    from posbench.evaluation.settings import EvalConfig
    from posbench.store.rundir import write_metrics

    runs, _, _ = sweep
    run_dir = tmp_path / "run"
    shutil.copytree(next(runs.glob("rope_*s0_*")), run_dir)
    write_metrics(run_dir, {**read_metrics(run_dir), "evaluations": []})
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
    m = read_metrics(run_dir)
    assert sorted({(e["protocol"], e["length"]) for e in m["evaluations"]}) == [
        ("nonoverlapping", 16), ("nonoverlapping", 32), ("sliding", 16), ("sliding", 32)]
    assert {k.split("/")[1] for k in np.load(run_dir / "per_position.npz").files} >= {"nonoverlapping", "sliding"}


# -- what a command says, where ---------------------------------------------------------------------


def test_a_sweep_on_a_pipe_keeps_stdout_for_results_and_says_each_thing_once(tmp_path, cache_dir):
    """Hydra's lines go to stderr with the rest; no progress bars in a pipe; the non-UTF-8 share
    is told once per command (not once per load of the corpus); each run names its directory."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"text{i}.txt").write_text("plain text, and more of it. " * 120)
    (docs / "blob.txt").write_bytes(bytes(range(128, 256)) * 20)
    proc = cli("posbench.cli.train", "-m", "seed=0,1", *SMALL, "train.steps=2", f"data.path={docs}", f"runs_dir={tmp_path / 'runs'}")
    # stdout: one result line per run (run id, status, scores, directory), nothing else
    assert sorted(line.split()[0] for line in proc.stdout.splitlines()) == sorted(
        p.name for p in (tmp_path / "runs").iterdir() if not p.name.startswith("."))
    assert "[HYDRA] Launching 2 jobs locally" in proc.stderr
    assert proc.stderr.count("are not UTF-8 text") == 1
    assert "step/s" not in proc.stderr and "tok/s" not in proc.stderr and "\r" not in proc.stderr
    dirs = [line.split("run directory: ")[1] for line in proc.stderr.splitlines() if "run directory: " in line]
    assert sorted(dirs) == sorted(str(p) for p in (tmp_path / "runs").iterdir() if not p.name.startswith("."))
