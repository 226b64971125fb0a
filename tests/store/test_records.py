"""A study's records file (posbench/store/records.py): the ended runs of a runs folder, less their weights
and resume state, restored bit for bit (the per-position curves in float16, within 2^-11 of each value);
a run still running or locked is left for later; a run kept
once is replaced only when its files change; records that would write outside their folder are refused."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from posbench.core.errors import PosbenchError
from posbench.core.paths import portable
from posbench.store.records import LEFT_OUT, Kept, compact_curves, keep, listing, read_records, unpack, write_records
from posbench.store.rundir import PER_POSITION, RunDir
from tests.conftest import tree


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def runs(sweep, tmp_path) -> Path:
    copy = tmp_path / "runs"
    shutil.copytree(sweep[0], copy)
    return copy


def run_dirs(runs: Path) -> list[Path]:
    return sorted(p for p in runs.iterdir() if (p / "metrics.json").exists())


def test_ended_runs_come_back_bit_for_bit_without_weights_and_a_locked_run_waits(runs, tmp_path):
    dirs = run_dirs(runs)
    assert any((p / "checkpoint.pt").exists() for p in dirs)
    records = tmp_path / "kept.parquet"
    with RunDir(dirs[0]).lock():  # a run a process works on (posbench-eval adding records, say)
        kept = keep(runs, records)
    assert (kept.copied, kept.left) == (len(dirs) - 1, 1)
    unpack(records, tmp_path / "back")
    back = tmp_path / "back"
    assert not (back / dirs[0].name).exists()
    for d in dirs[1:]:
        expected = {k: portable(v.decode()).encode() if k.endswith((".yaml", ".json")) else v
                    for k, v in files_of(d).items() if k not in LEFT_OUT and not k.endswith(".tmp")}
        got = files_of(back / d.name)
        assert PER_POSITION in expected and set(got) == set(expected)
        curves, original = RunDir(back / d.name).read_per_position(), RunDir(d).read_per_position()
        assert set(curves) == set(original) and original
        for key, curve in curves.items():  # float16: within half a float16 step of each value, NaN where NaN
            assert curve.dtype == np.float16
            np.testing.assert_allclose(curve.astype(float), original[key], rtol=2.0 ** -11, atol=0)
        del got[PER_POSITION], expected[PER_POSITION]
        assert got == expected  # every other file kept, byte for byte, paths portable
        tmp = tempfile.gettempdir().rstrip("/") + "/"  # the runs' folders lie under it
        assert tmp in (d / "config.yaml").read_text() and tmp not in (back / d.name / "config.yaml").read_text()
    assert not [p for p in back.rglob("*") if p.name in LEFT_OUT]
    assert list(back.glob(".hydra/*/multirun.yaml"))  # the sweep's command, which the report reads
    # the lock is free now: only that run is added
    again = keep(runs, records)
    assert (again.copied, again.left) == (1, 0)
    written = records.stat().st_mtime_ns
    assert keep(runs, records).copied == 0 and records.stat().st_mtime_ns == written  # nothing changed: not rewritten


def test_a_second_keep_of_one_runs_folder_waits_for_the_first(runs, tmp_path):
    """A study's periodic keep beside its final one: each would write what it read, and the last could drop a
    run the other had added. The second waits on the runs folder's keep lock, then reads what the first wrote."""
    import threading

    from posbench.store.lock import hold
    from posbench.store.records import KEEP_LOCK

    records = tmp_path / "kept.parquet"
    with hold(runs / KEEP_LOCK):  # the first keep, still writing
        second = threading.Thread(target=keep, args=(runs, records))
        second.start()
        second.join(timeout=1.0)
        assert second.is_alive() and not records.exists()  # waiting, nothing written
    second.join(timeout=60)
    assert not second.is_alive() and set(read_records(records)) >= {d.name for d in run_dirs(runs)}


def test_a_run_whose_records_grew_is_kept_again_and_one_already_unpacked_is_left(runs, tmp_path):
    records = tmp_path / "kept.parquet"
    keep(runs, records)
    unpack(records, tmp_path / "back")
    d = run_dirs(runs)[0]
    (d / "metrics.json").write_text((d / "metrics.json").read_text() + "\n")  # posbench-eval added records, say
    assert keep(runs, records).copied == 1
    assert read_records(records)[d.name]["metrics.json"] == portable((d / "metrics.json").read_text()).encode()
    # a folder the destination has is left whole, as it is (a study's own newer copy of the run)
    written, left = unpack(records, tmp_path / "back")
    assert written == 0 and left == len(read_records(records))
    assert not (tmp_path / "back" / d.name / "metrics.json").read_text().endswith("\n\n")


def test_records_of_float32_curves_are_rewritten_compact_at_the_next_keep_and_then_left(runs, tmp_path):
    """Records written before the curves were compacted: the next keep (even of an empty runs folder)
    rewrites them in float16, and a keep after that finds nothing to change."""
    import io

    old = tmp_path / "old.parquet"
    files = {d.name: {p.name: p.read_bytes() for p in d.iterdir() if p.is_file() and p.name not in LEFT_OUT}
             for d in run_dirs(runs)}
    write_records(files, old)
    empty = tmp_path / "empty"
    empty.mkdir()
    before = old.stat().st_size
    assert keep(empty, old) == Kept(0, 0, compacted=True)
    kept = read_records(old)
    assert old.stat().st_size < before and set(kept) == set(files)
    for folder, named in kept.items():
        with np.load(io.BytesIO(named[PER_POSITION])) as z:
            assert {z[k].dtype for k in z.files} == {np.dtype(np.float16)}
        assert named["metrics.json"] == files[folder]["metrics.json"]  # only the curves change
    written = old.stat().st_mtime_ns
    assert keep(empty, old) == Kept(0, 0, compacted=False)
    assert old.stat().st_mtime_ns == written


def test_compact_curves_is_idempotent_and_leaves_what_float16_cannot_hold_or_numpy_cannot_read():
    import io

    buf = io.BytesIO()
    np.savez_compressed(buf, loss=np.array([3.25, np.nan, 1.0], np.float32), big=np.array([1e6], np.float32),
                        steps=np.arange(3))
    once = compact_curves(buf.getvalue())
    assert compact_curves(once) == once
    with np.load(io.BytesIO(once)) as z:
        assert (z["loss"].dtype, z["big"].dtype, z["steps"].dtype) == (np.float16, np.float32, np.arange(3).dtype)
        assert np.isnan(z["loss"][1]) and z["big"][0] == 1e6
    assert compact_curves(b"not an npz") == b"not an npz"


@pytest.mark.parametrize("folder", ["../outside", "/etc/x", "a/../../b"])
def test_records_that_would_write_outside_their_folder_are_refused_with_nothing_written(tmp_path, folder):
    path = tmp_path / "evil.parquet"
    pq.write_table(pa.table({"folder": ["ok", folder], "file": ["metrics.json", "metrics.json"],
                             "data": [b"{}", b"{}"]}), path)
    with pytest.raises(PosbenchError, match="outside their root"):
        unpack(path, tmp_path / "dest")
    assert tree(tmp_path / "dest") == []


def test_a_file_that_is_not_records_is_one_error_naming_it(tmp_path):
    (tmp_path / "notes.parquet").write_text("not parquet")
    with pytest.raises(PosbenchError, match="cannot read records .*notes.parquet"):
        read_records(tmp_path / "notes.parquet")
    with pytest.raises(PosbenchError, match="is not a records file"):
        listing(tmp_path / "missing.parquet")
