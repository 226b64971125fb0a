"""Corpus loading (posbench/data/load.py, posbench/data/corpus.py): the embedded default, local text,
the hub code path on a local dataset, the cache keyed on content, and binary input."""

import json
import logging
import time

import numpy as np
import pytest

from posbench.core.errors import PosbenchError
from posbench.data.corpus import DataConfig, is_validation_document, list_documents
from posbench.data.load import load_corpus


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


def data_cfg(cache_dir, **kw):
    return DataConfig(cache_dir=str(cache_dir), **kw)


def test_local_folder_splits_by_document_deterministically(text_corpus, cache_dir):
    cfg = data_cfg(cache_dir, name="local", source="local", path=str(text_corpus), val_fraction=0.2)
    a = load_corpus(cfg)
    b = load_corpus(cfg)
    assert a.fingerprint == b.fingerprint and a.fingerprint["documents"] == 40
    assert np.array_equal(a.train, b.train) and np.array_equal(a.val, b.val)
    val_docs = [p.name for p in sorted(text_corpus.glob("*.txt")) if is_validation_document(p.name, 0.2)]
    assert 0 < len(val_docs) < 40
    # validation = exactly the held-out documents, in order, each followed by the separator
    expected = b"".join((text_corpus / n).read_bytes() + b"\0" for n in val_docs)
    assert bytes(a.val) == expected
    assert len(a.train) + len(a.val) == sum(p.stat().st_size + 1 for p in text_corpus.glob("*.txt"))


def test_single_file_holds_out_its_tail(tmp_path, cache_dir):
    f = tmp_path / "book.txt"
    f.write_text("abcdefghij" * 100)
    c = load_corpus(data_cfg(cache_dir, name="book", source="local", path=str(f), val_fraction=0.1))
    assert len(c.val) == 101 and len(c.train) == 900  # 1000 bytes + separator, last 10% held out
    assert bytes(c.train[:10]) == b"abcdefghij"


def test_stdlib_listing_excludes_third_party_and_caches(tmp_path, cache_dir):
    root = tmp_path / "lib"
    for rel in ["os.py", "json/__init__.py", "site-packages/torch/x.py", "__pycache__/os.cpython.py", "notes.txt"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    assert [p.relative_to(root).as_posix() for p in list_documents(root, "**/*.py")] == ["json/__init__.py", "os.py"]
    c = load_corpus(data_cfg(cache_dir, name="fake_stdlib", source="stdlib", path=str(root), val_fraction=0.5))
    assert c.fingerprint["documents"] == 2 and "python" in c.fingerprint


def test_hub_code_path_on_a_local_dataset(tmp_path, cache_dir):
    """The same load_dataset call that fetches wikitext-103 from the hub, on a dataset made here."""
    ds_dir = tmp_path / "tiny_hub_dataset"
    ds_dir.mkdir()
    for split, n in [("train", 50), ("validation", 10)]:
        rows = [json.dumps({"content": f"{split} line {i}\n"}) for i in range(n)]
        (ds_dir / f"{split}.jsonl").write_text("\n".join(rows) + "\n")
    cfg = data_cfg(cache_dir, name="tiny_hub", source="hub", hub_name=str(ds_dir), text_field="content", doc_separator="")
    c = load_corpus(cfg)
    assert bytes(c.val).startswith(b"validation line 0\nvalidation line 1\n")
    assert bytes(c.train).count(b"\n") == 50


def test_hub_without_network_fails_fast_with_a_clear_message(cache_dir):
    cfg = data_cfg(cache_dir, name="wikitext103", source="hub", hub_name="Salesforce/wikitext", hub_config="wikitext-103-raw-v1")
    t = time.perf_counter()
    with pytest.raises(PosbenchError, match="cannot load hub dataset 'Salesforce/wikitext'"):
        load_corpus(cfg)
    assert time.perf_counter() - t < 30


def test_missing_and_empty_local_corpora_are_clear_errors(tmp_path, cache_dir):
    with pytest.raises(PosbenchError, match="does not exist"):
        load_corpus(data_cfg(cache_dir, name="x", source="local", path=str(tmp_path / "nope")))
    (tmp_path / "empty").mkdir()
    with pytest.raises(PosbenchError, match="no documents"):
        load_corpus(data_cfg(cache_dir, name="x", source="local", path=str(tmp_path / "empty")))


def test_a_folder_whose_only_file_hashes_to_validation_still_splits(tmp_path, cache_dir):
    folder = tmp_path / "one"
    folder.mkdir()
    name = next(f"doc{i}.txt" for i in range(10_000) if is_validation_document(f"doc{i}.txt", 0.05))
    (folder / name).write_text("x" * 1000)
    c = load_corpus(data_cfg(cache_dir, name="one", source="local", path=str(folder), val_fraction=0.05))
    assert len(c.train) > 0 and len(c.val) > 0 and len(c.train) + len(c.val) == 1001


def test_a_validation_split_of_few_documents_is_named_at_load_time(caplog):
    """A small own corpus gave one validation document without a word: now every load says so."""
    import logging

    import numpy as np

    from posbench.data.load import validation_documents, warn_few_documents

    one = np.frombuffer(b"def f():\n    pass\n\0", dtype=np.uint8)
    many = np.frombuffer(b"\0".join([b"doc"] * 8), dtype=np.uint8)
    assert validation_documents(one, "\0") == 1 and validation_documents(many, "\0") == 8
    assert validation_documents(one, "") == 1
    with caplog.at_level(logging.WARNING, logger="posbench"):
        assert warn_few_documents(many, "\0", 0.05) == 8
        assert caplog.text == ""
        warn_few_documents(one, "\0", 0.05)
    assert "holds 1 document(s)" in caplog.text and "absent" in caplog.text and "data.val_fraction (now 0.05)" in caplog.text
