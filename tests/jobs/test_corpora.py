"""posbench/jobs/corpora.py: a run made from a corpus that has changed since (edited text, another
Python's standard library) is refused, not skipped or resumed on the new text."""

import numpy as np
import pytest

from posbench.jobs.train import run
from posbench.store.rundir import RunDir

SMALL = ["model=tiny", "train_len=16", "train.batch_size=4", "train.warmup_steps=2", "train.log_every=5",
         "train.val_every=20", "train.val_batches=1", "eval.multiples=[1,2]", "eval.scored_tokens=128", "data=local"]


def test_a_run_of_a_corpus_edited_since_is_refused_not_skipped(entry, compose, tmp_path, cache_dir, monkeypatch):
    """The identical command after an edit of the corpus: one line naming both hashes and what to
    do, for the complete run (posbench-train would skip it, posbench-eval score it on the new
    text) and for a run killed before its metrics (it would resume on the new text)."""
    import re

    from tests.conftest import tree, write_text_corpus

    monkeypatch.chdir(tmp_path)
    docs = write_text_corpus(tmp_path / "docs", n_docs=20)
    args = [*SMALL, "train.steps=5", f"data.path={docs}", f"runs_dir={tmp_path / 'runs'}"]
    cfg = compose(*args)
    run(cfg)
    old = cfg.folder.read_metrics()["corpus"]["hash"]
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
    assert RunDir(run(cfg)).read_metrics()["corpus"]["hash"] == old


def test_a_stdlib_run_of_another_python_is_refused(tmp_path):
    from posbench.core.errors import PosbenchError
    from posbench.data.corpus import Corpus
    from posbench.jobs.corpora import check_same_corpus

    RunDir(tmp_path).write_corpus({"name": "stdlib", "source": "stdlib", "python": "3.10.4", "documents": 1890, "hash": "a" * 16})
    now = Corpus(np.zeros(4, np.uint8), np.zeros(4, np.uint8),
                 {"name": "stdlib", "source": "stdlib", "python": "3.11.7", "documents": 1890, "hash": "b" * 16})
    with pytest.raises(PosbenchError) as e:
        check_same_corpus(RunDir(tmp_path), now)
    assert str(e.value) == (f"run {tmp_path.name} was trained on corpus 'stdlib' with hash {'a' * 16}; the standard library "
                            f"of Python 3.11.7 now gives hash {'b' * 16} (Python 3.10.4 -> 3.11.7); its results belong to the "
                            f"old corpus: train it in a new runs_dir, or delete {tmp_path} to train it again")
    check_same_corpus(RunDir(tmp_path), Corpus(now.train, now.val, {**now.fingerprint, "hash": "a" * 16}))  # the same: passes
