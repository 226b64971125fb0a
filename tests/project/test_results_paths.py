"""No committed file under results/ names a folder of the machine that made it (a run's config, a command,
a log line): another reader's machine has other folders, and a path under /home names a person. Reports
write portable paths themselves (posbench/core/paths.py); scripts/portable_paths.py converted the earlier
ones. Checked in every file, and in every text file inside a records file (posbench/store/records.py)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from posbench.core.paths import portable
from posbench.store.records import SUFFIX, read_records

RESULTS = Path(__file__).resolve().parents[2] / "results"
# an absolute path: a root folder of Linux or macOS at a path's start (not inside a word, a relative path or a URL)
ABSOLUTE = re.compile(r"(?<![\w.~$/:-])/(?:work|tmp|home|root|Users|mnt|opt|usr|var|private|scratch|srv|media|data|"
                      r"lustre|gpfs|nfs|net|Volumes|etc)/[^\s\"'`]*")


def texts(path: Path):
    """(name, text) of the file, or of each text file a records file holds."""
    if path.suffix == SUFFIX:
        for folder, named in read_records(path).items():
            for name, data in named.items():
                try:
                    yield f"{path.name}:{folder}/{name}", data.decode()
                except UnicodeDecodeError:
                    pass
        return
    data = path.read_bytes()
    if path.suffix == ".gz":  # a report's manifest and its records (evaluations.csv.gz): the text inside
        data = gzip.decompress(data)
    try:
        yield path.name, data.decode()
    except UnicodeDecodeError:
        pass  # a figure or an array


def test_the_pattern_finds_the_paths_it_is_for():
    found = ABSOLUTE.findall("runs_dir=/work/runs/map data.path=/tmp/corpus (see https://host/tmp/x) "
                             "at /home/alice/x and ../runs/map, $TMPDIR/g, ~/.cache, 1/4, 16x/1x")
    assert found == ["/work/runs/map", "/tmp/corpus", "/home/alice/x"]
    assert not ABSOLUTE.findall(portable("runs_dir=/work/runs/map data.path=/tmp/corpus", cwd=Path("/work/main"),
                                         tmp=Path("/tmp")))


@pytest.mark.parametrize("folder", sorted(p.name for p in RESULTS.iterdir() if p.is_dir()))
def test_no_committed_result_names_an_absolute_path(folder):
    hits = [f"{name}: {m}" for path in sorted((RESULTS / folder).rglob("*")) if path.is_file()
            for name, text in texts(path) for m in ABSOLUTE.findall(text)]
    assert not hits, f"{len(hits)} absolute paths, e.g. {hits[:3]}: run scripts/portable_paths.py"


def test_a_compressed_file_is_read_and_rewritten_inside_its_gzip(tmp_path):
    """A report's manifest.json.gz and evaluations.csv.gz hold run configs and paths too: the script
    rewrites the text inside and keeps the file compressed, and this test's reader looks inside."""
    from tests.helpers import load_script

    path = tmp_path / "manifest.json.gz"
    path.write_bytes(gzip.compress(b'{"configs": {"r": "runs_dir: /work/runs/map"}}'))
    assert [n for n, t in texts(path) if ABSOLUTE.search(t)] == ["manifest.json.gz"]
    assert load_script("portable_paths").convert(path, write=True) == 1
    assert gzip.decompress(path.read_bytes()) == b'{"configs": {"r": "runs_dir: ../runs/map"}}'
