"""posbench/report/load.py: runs of several corpora are named by their corpus (the map's corpus axis);
runs of one corpus keep their names."""

import pandas as pd

from posbench.report.load import corpus_of, with_corpus, with_corpus_labels
from posbench.report.sections.tokenizers import base_model, tokenizer_of


def frames(corpora):
    runs = pd.DataFrame({"run_id": [f"r{i}" for i in range(len(corpora))], "model": ["small", "small/bpe1024", "tiny"][:len(corpora)],
                         "corpus": [{"name": c, "hash": "h"} for c in corpora]})
    evals = pd.DataFrame({"run_id": runs["run_id"], "model": runs["model"], "multiple": 1.0})
    return runs, evals


def test_two_corpora_name_every_model_with_its_corpus():
    runs, evals = with_corpus_labels(*frames(["stdlib", "pydocs", "stdlib"]))
    assert runs["model"].tolist() == ["small@stdlib", "small@pydocs/bpe1024", "tiny@stdlib"]
    assert evals["model"].tolist() == runs["model"].tolist()
    # the tokenizer section pairs a subword row with the bytes row of its own corpus
    assert base_model("small@pydocs/bpe1024") == "small@pydocs" and tokenizer_of("small@pydocs/bpe1024") == "bpe1024"
    assert corpus_of("small@pydocs/bpe1024") == "pydocs" and corpus_of("small") is None
    assert with_corpus("small/bpe1024", "pydocs") == "small@pydocs/bpe1024"


def test_one_corpus_changes_nothing():
    before = frames(["stdlib", "stdlib", "stdlib"])
    runs, evals = with_corpus_labels(*before)
    assert runs["model"].tolist() == ["small", "small/bpe1024", "tiny"] and evals.equals(before[1])
    runs, _ = with_corpus_labels(before[0].assign(corpus=None), before[1])  # not recorded (a rebuild's records)
    assert runs["model"].tolist() == ["small", "small/bpe1024", "tiny"]
