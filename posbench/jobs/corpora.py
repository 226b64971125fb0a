"""Corpus checks that read run directories: a run's results belong to the corpus it was trained on
(``check_same_corpus``), and a command's checks load each corpus once and leave no cache behind
when they refuse it (``corpora_for_checks``)."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

from posbench.core.errors import PosbenchError
from posbench.data.corpus import Corpus, DataConfig, corpus_change, remove_cache
from posbench.data.load import load_corpus
from posbench.store.rundir import RunDir


def check_same_corpus(folder: RunDir, corpus: Corpus) -> None:
    """A run's results belong to the corpus it was trained on: skipping, resuming or evaluating it
    with another (a local file edited since, another Python's standard library) would mix the two
    under one run id. PosbenchError saying what changed and what to do; runs that recorded no
    corpus pass."""
    recorded = folder.recorded_corpus()
    if recorded is None or (change := corpus_change(recorded, corpus.fingerprint)) is None:
        return
    now = corpus.fingerprint
    if change.startswith("tokenizer "):  # same text, another tokenizer.json (an edited file, another BPE)
        raise PosbenchError(
            f"run {folder.name} was trained with tokenizer sha256 {change.split()[1]}; data.tokenizer now gives "
            f"{change.split()[-1]}; its results belong to the old tokenizer: train it in a new runs_dir, or delete "
            f"{folder} to train it again")
    what = {"local": f"data.path={now.get('path')}", "hub": f"data.hub_name={now.get('hub_name')}"}.get(
        now.get("source"), f"the standard library of Python {now.get('python')}")
    raise PosbenchError(
        f"run {folder.name} was trained on corpus {now.get('name')!r} with hash {recorded['hash']}; "
        f"{what} now gives hash {now['hash']} ({change}); its results belong to the old corpus: train it in a new "
        f"runs_dir, or delete {folder} to train it again")


@contextlib.contextmanager
def corpora_for_checks() -> Iterator[Callable[[DataConfig], Corpus]]:
    """A loader for a command's checks before it runs: each corpus is loaded once, and a token
    cache loaded (built) here is removed again when a check refuses the command, so a refused
    command leaves nothing behind."""
    corpora: dict[DataConfig, Corpus] = {}

    def corpus_of(data: DataConfig) -> Corpus:
        if data not in corpora:
            corpora[data] = load_corpus(data)
        return corpora[data]

    try:
        yield corpus_of
    except PosbenchError:
        for corpus in corpora.values():
            remove_cache(corpus)
        raise


def check_runs_corpora(runs: list[tuple[RunDir, DataConfig]]) -> None:
    """``check_same_corpus`` for each (run directory, its data settings)."""
    with corpora_for_checks() as corpus_of:
        for folder, data in runs:
            check_same_corpus(folder, corpus_of(data))
