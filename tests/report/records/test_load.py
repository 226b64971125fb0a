"""posbench/report/records/load.py: runs of several corpora are named by their corpus (the map's corpus axis);
runs of one corpus keep their names."""

import pandas as pd

from posbench.report.records.load import corpus_of, with_corpus, with_corpus_labels
from posbench.report.analysis.tokenizers import base_model, tokenizer_of


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


def test_runs_at_several_rope_bases_name_each_model_with_its_base_and_one_base_changes_nothing():
    """experiment=rope_base: each base is its own panel (the pooled-settings check would refuse them as seeds
    of one row) and the map's base axis reads it; corpus and tokenizer read as before."""
    from omegaconf import OmegaConf

    from posbench.report.records.load import base_of, with_base, with_base_labels
    from posbench.report.analysis.points import coordinates, rope_base

    runs = pd.DataFrame({"run_id": ["a", "b", "c", "d"], "model": ["small", "small", "small@pydocs/bpe1024", "small"],
                         "run_dir": ["da", "db", "dc", "dd"]})
    evals = pd.DataFrame({"run_id": ["a", "b", "c", "d"], "model": runs["model"]})
    configs = {"da": OmegaConf.create({"encoding": {"name": "rope", "base": 500.0}}),
               "db": OmegaConf.create({"encoding": {"name": "rope", "base": 1e6}}),
               "dc": OmegaConf.create({"encoding": {"name": "p_rope", "base": 500.0}}),
               "dd": OmegaConf.create({"encoding": {"name": "alibi"}})}
    labelled, labelled_evals = with_base_labels(runs, evals, configs)
    assert labelled["model"].tolist() == ["small|base=500", "small|base=1000000", "small|base=500@pydocs/bpe1024", "small"]
    assert labelled_evals["model"].tolist() == labelled["model"].tolist()
    assert coordinates("small|base=500@pydocs/bpe1024") == ("small", "pydocs", "bpe1024")
    assert corpus_of("small|base=500@pydocs/bpe1024") == "pydocs" and rope_base("small|base=1000000") == "1000000"
    assert rope_base("small") == "-" and base_of(with_base("tiny@stdlib", 100.0)) == ("tiny@stdlib", 100.0)
    one = {d: OmegaConf.create({"encoding": {"name": "rope", "base": 1e4}}) for d in ("da", "db", "dc")}
    same, same_evals = with_base_labels(runs, evals, one)
    assert same["model"].tolist() == runs["model"].tolist() and same_evals.equals(evals)
