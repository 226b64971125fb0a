"""The English-prose corpus ``data=pydocs`` (posbench/data/pydocs.py, posbench/data/corpus.py) on a small
sample made here: a folder laid out as Debian's python3-doc package lays out its reST sources."""

import sys

import numpy as np
import pytest

from posbench.core.errors import PosbenchError
from posbench.data.corpus import DataConfig, corpus_change, is_validation_document
from posbench.data.load import load_corpus
from posbench.data.pydocs import INSTALL, docs_root, installed_versions, sources_of

PAGES = ["tutorial/introduction", "tutorial/classes", "library/os", "library/json", "howto/logging", "faq/general",
         "reference/datamodel", "glossary", "whatsnew/3.11", "library/functions"]


def fake_docs(base, version="3.11", copies=3):
    """``<base>/python<version>/html/_sources/<page>.rst.txt``: 30 pages of English prose with reST markup."""
    root = sources_of(version, base)
    for c in range(copies):
        for i, page in enumerate(PAGES):
            f = root / f"{page}{c or ''}.rst.txt"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(f"{page}\n{'=' * len(page)}\n\nThis page describes :mod:`{page}` in plain words, "
                         f"part {c} of {i}. " * 40)
    (root.parent / "index.html").write_text("<html>not a document</html>")  # the HTML beside the sources
    return root


def test_the_installed_sources_are_found_and_split_by_document(tmp_path, cache_dir):
    root = fake_docs(tmp_path / "doc")
    found, version = docs_root(None, base=tmp_path / "doc")
    assert (found, version) == (root, "3.11")
    cfg = DataConfig(name="pydocs", source="pydocs", path=str(root), cache_dir=str(cache_dir), val_fraction=0.2)
    a, b = load_corpus(cfg), load_corpus(cfg)
    assert a.fingerprint == b.fingerprint and np.array_equal(a.val, b.val) and np.array_equal(a.train, b.train)
    fp = a.fingerprint
    assert (fp["source"], fp["python_docs"], fp["documents"]) == ("pydocs", "3.11", 30) and "path" not in fp
    # validation is exactly the held-out documents (whole files, sorted by path), each followed by the separator
    files = sorted(root.glob("**/*.txt"), key=lambda p: p.relative_to(root).as_posix())
    held = [f for f in files if is_validation_document(f.relative_to(root).as_posix(), 0.2)]
    assert 0 < len(held) < 30
    assert bytes(a.val) == b"".join(f.read_bytes() + b"\0" for f in held)
    assert bytes(a.train) == b"".join(f.read_bytes() + b"\0" for f in files if f not in held)


def test_the_fingerprint_is_the_content_not_the_machine(tmp_path, cache_dir):
    """The same sources in two places have one fingerprint (one cache entry); an edit, another one."""
    here, there = fake_docs(tmp_path / "a"), fake_docs(tmp_path / "b")
    cfg = dict(name="pydocs", source="pydocs", cache_dir=str(cache_dir))
    a = load_corpus(DataConfig(path=str(here), **cfg)).fingerprint
    assert load_corpus(DataConfig(path=str(there), **cfg)).fingerprint == a
    (there / "glossary.rst.txt").write_text("An edited glossary.")
    b = load_corpus(DataConfig(path=str(there), **cfg)).fingerprint
    assert b["hash"] != a["hash"] and corpus_change(a, b) == f"bytes {a['bytes']} -> {b['bytes']}"
    newer = load_corpus(DataConfig(path=str(fake_docs(tmp_path / "c", version="3.13")), **cfg)).fingerprint
    assert newer["hash"] != a["hash"] and corpus_change(a, newer).startswith("Python docs 3.11 -> 3.13")


def test_the_running_pythons_docs_first_else_the_newest(tmp_path):
    base = tmp_path / "doc"
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    for v in ("3.9", "3.99", running):
        fake_docs(base, v, copies=1)
    (base / "python3.7").mkdir()  # a package's folder without sources is not an installation
    assert installed_versions(base) == sorted({"3.9", "3.99", running}, key=lambda v: tuple(map(int, v.split("."))))
    assert docs_root(None, base) == (sources_of(running, base), running)
    other = tmp_path / "other"
    fake_docs(other, "3.9", copies=1), fake_docs(other, "3.10", copies=1)
    if running not in ("3.9", "3.10"):
        assert docs_root(None, other)[1] == "3.10"  # numeric order, not the string's


def test_missing_sources_are_one_line_naming_the_path_and_the_install(tmp_path, cache_dir):
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    with pytest.raises(PosbenchError) as e:
        docs_root(None, base=tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and str(sources_of(running, tmp_path)) in msg and f"`{INSTALL}`" in msg
    with pytest.raises(PosbenchError) as e:
        load_corpus(DataConfig(name="pydocs", source="pydocs", path=str(tmp_path / "gone"), cache_dir=str(cache_dir)))
    assert "\n" not in str(e.value) and str(tmp_path / "gone") in str(e.value) and INSTALL in str(e.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(PosbenchError, match=r"no documents under .*empty.* match '\*\*/\*\.txt'"):
        load_corpus(DataConfig(name="pydocs", source="pydocs", path=str(tmp_path / "empty"), cache_dir=str(cache_dir)))


def test_data_pydocs_is_a_config_choice(tmp_path, compose, entry):
    root = fake_docs(tmp_path / "doc")
    spec = compose("data=pydocs", f"data.path={root}")
    assert (spec.data.name, spec.data.source, spec.data.glob, spec.data.val_fraction) == ("pydocs", "pydocs", "**/*.txt", 0.05)
    status, err = entry("train", "data=pydocs", f"data.path={tmp_path / 'gone'}", "model=tiny", "train=smoke")
    assert status == 2 and err.strip().count("\n") == 0 and INSTALL in err and str(tmp_path / "gone") in err
