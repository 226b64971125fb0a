"""A study's run directories kept as one compact records file: every file of every kept run (and the
sweeps' ``.hydra/*/multirun.yaml``) as a row of one Parquet table, restored bit for bit as kept: the
configs and records (.yaml, .json) with this machine's paths made portable (posbench/core/paths.py; a
committed file names no folder of the machine that made it), ``per_position.npz`` with its curves in
float16 (below), every other file as it was.

    posbench-records keep RUNS_DIR RECORDS.parquet   # RUNS_DIR's ended runs added (less weights, resume state)
    posbench-records unpack RECORDS.parquet DEST     # the run directories again (a run already in DEST is left)
    posbench-records list RECORDS.parquet            # one line per folder: its status and files

Why this form. A committed study keeps its runs for two readers: ``posbench-report`` (a report rebuilt
from the runs, the same reader as a fresh runs folder) and a resumed sweep (a run found complete with its
evaluations is skipped, so a study continues on a machine that has none of its runs). Both read run
directories, so the records are the directories' own files, unchanged, not a second schema that each
reader would need a converter for. Parquet (pyarrow, already installed with ``datasets``) because it
compresses a column as a whole: the rows are sorted by file name, so every run's ``metrics.json`` sits
beside the others' and zstd finds what they share (the budget study's 145 run folders: 9.7 MB as files,
1.8 MB as records; the map's 1,350 files: 4.7 MB as 0.4 MB). ``pd.read_parquet`` reads it without
posbench (columns ``folder``, ``file``, ``data``: the folder relative to RUNS_DIR, the file's name, its
bytes). The report's own columnar records of the same runs are its ``evaluations.csv.gz``
(posbench/report/committed.py).

The per-position curves (``per_position.npz``: a run's mean loss at each window position, every variant
and length) were 4.5 of the RoPE-base study's 5.3 MB of records: float32 in deflate, which zstd cannot
compress across runs. Records keep them as float16 in an uncompressed npz (the same study: 1.7 MB): a
curve moves by at most 2^-11 of its value at any value above 2^-14 (0.002 nats at a loss of 4; the
smallest mean loss of that study's 168 runs is 0.65), far below a line's width in the one
figure that reads them (posbench/report/sections/per_position.py, a moving average); no table or verdict
reads them. An older records file is rewritten in this form at its next ``keep`` (an empty RUNS_DIR will
do), so ``keep`` stays the one writer; ``keep`` of a posbench before this form writes them back in float32
(nothing lost, the file larger until the next keep).

Left out, as ``keep`` leaves them out of a kept run: the weights (``checkpoint.pt``), the resume state,
the lock and ``token_losses.npz`` (each scored token's loss: up to ~4 MB a run; the key-token analysis
needs it, so records without it give a report without that section). A row whose folder is absolute or
climbs out of DEST (``..``) is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.files import atomic_write_bytes, make_dirs
from posbench.core.paths import portable
from posbench.store.lock import hold
from posbench.store.rundir import CHECKPOINT, LOCK, METRICS, PER_POSITION, RESUME, TOKEN_LOSSES, RunDir, find_runs

LEFT_OUT = frozenset({CHECKPOINT, RESUME, LOCK, TOKEN_LOSSES})
ENDED = ("completed", "diverged")
SUFFIX = ".parquet"
COMPRESSION_LEVEL = 19  # zstd's strongest common level: records are written once a run and read rarely
PORTABLE_SUFFIXES = (".yaml", ".json")  # text that names paths: configs, records with their commands
SWEEPS = ".hydra"  # <runs_dir>/.hydra/<sweep>/multirun.yaml: each sweep's command, which the report reads

Files = dict[str, dict[str, bytes]]  # folder (posix, relative) -> file name -> bytes


@dataclass(frozen=True)
class Kept:
    """What ``keep`` did: runs added or replaced, runs left (unfinished or in use)."""

    copied: int
    left: int
    compacted: bool = False  # an older file's curves rewritten in float16 (no run changed for that)


def read_records(path: Path) -> Files:
    """Every file in a records file, by folder; a PosbenchError naming the file when it is none."""
    import pyarrow.parquet as pq

    path = Path(path)
    if path.suffix != SUFFIX or not path.is_file():
        raise PosbenchError(f"{str(path)!r} is not a records file; give a {SUFFIX} file written by posbench-records keep")
    try:
        table = pq.read_table(path, columns=["folder", "file", "data"]).to_pydict()
    except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds for a damaged or foreign file
        raise PosbenchError(f"cannot read records {str(path)!r}: {type(e).__name__}: {e}") from None
    files: Files = {}
    for folder, name, data in zip(table["folder"], table["file"], table["data"]):
        files.setdefault(_checked(folder, path), {})[_checked_name(name, path)] = data
    return files


def write_records(files: Files, path: Path) -> None:
    """``files`` as one Parquet table, rows sorted by (file name, folder) so that each kind of file
    compresses together; written to a temporary file and renamed into place."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = sorted((name, folder, data) for folder, named in files.items() for name, data in named.items())
    table = pa.table({"folder": [r[1] for r in rows], "file": [r[0] for r in rows],
                      "data": pa.array([r[2] for r in rows], type=pa.large_binary())})
    buf = io.BytesIO()
    # one row group and large pages: zstd sees a whole column at once (a page of 1 MB compresses half as well)
    pq.write_table(table, buf, compression="zstd", compression_level=COMPRESSION_LEVEL,
                   data_page_size=64 << 20, row_group_size=max(len(rows), 1))
    atomic_write_bytes(Path(path), buf.getvalue())


def kept_bytes(path: Path) -> bytes:
    """A file as records keep it: a config or record (.yaml, .json) with this machine's paths portable
    (posbench/core/paths.py: a runs folder, a corpus path or a command names no folder of this machine);
    the per-position curves in float16 (``compact_curves``); any other file as it is."""
    data = path.read_bytes()
    if path.suffix in PORTABLE_SUFFIXES:
        try:
            return portable(data.decode()).encode()
        except UnicodeDecodeError:
            return data
    return compact_curves(data) if path.name == PER_POSITION else data


FLOAT16_MAX = float(np.finfo(np.float16).max)


def compact_curves(data: bytes) -> bytes:
    """``per_position.npz`` as records keep it: each floating array in float16 where every finite value
    fits (a mean loss always does; an array that would overflow stays as it was), written by ``np.savez``
    uncompressed, which is deterministic (the same curves give the same bytes, so ``keep`` still sees
    that a run did not change) and idempotent. A file numpy cannot read is kept as it is."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception:  # noqa: BLE001 - a damaged file is kept as found; the report's check names it
        return data

    def half(a: np.ndarray) -> np.ndarray:
        finite = a[np.isfinite(a)] if np.issubdtype(a.dtype, np.floating) else None
        if finite is None or (finite.size and np.abs(finite).max() > FLOAT16_MAX):
            return a
        return a.astype(np.float16)

    buf = io.BytesIO()
    np.savez(buf, **{k: half(a) for k, a in arrays.items()})
    return buf.getvalue()


def run_files(folder: RunDir) -> dict[str, bytes]:
    """A run directory's files as records keep them (top level only: a run directory has no subfolders
    a reader needs)."""
    return {p.name: kept_bytes(p) for p in sorted(folder.path.iterdir())
            if p.is_file() and p.name not in LEFT_OUT and not p.name.endswith(".tmp")}


def ended(folder: RunDir) -> bool:
    metrics = folder.read_metrics(warn=False)
    return metrics is not None and metrics.get("status") in ENDED and folder.has_config()


def keep(runs: Path, records: Path) -> Kept:
    """Add ``runs``' ended runs (and its sweeps' commands) to ``records`` (created if absent): a run
    already kept is replaced only where its files changed (a later posbench-eval added records); a run
    still running, or whose lock another process holds, is left for a later call. The file is written
    only where something changed. One call at a time per runs folder (``KEEP_LOCK`` in it): a study's
    periodic keep beside its final one would otherwise each write what it read, and the last could drop a
    run the other had just added."""
    runs, records = Path(runs), Path(records)
    writable = os.access(runs, os.W_OK)  # someone else's read-only runs folder is kept without the lock
    with hold(runs / KEEP_LOCK, wait=True) if writable else contextlib.nullcontext():
        return _keep(runs, records)


KEEP_LOCK = ".keep.lock"


def _keep(runs: Path, records: Path) -> Kept:
    before = read_records(records) if records.exists() else {}
    # an older file's curves in float32 are compacted here, so that it is rewritten in the current form
    files = {folder: {name: compact_curves(data) if name == PER_POSITION else data for name, data in named.items()}
             for folder, named in before.items()}
    copied = left = 0
    for run in map(RunDir, find_runs(runs)):
        if not (ended(run) and run.lock_is_free()):
            left += 1
            continue
        folder = run.path.relative_to(runs).as_posix()
        now = run_files(run)
        if files.get(folder) != now:
            files[folder], copied = now, copied + 1
    for sweep in sorted(runs.glob(f"{SWEEPS}/*/multirun.yaml")):
        files.setdefault(sweep.parent.relative_to(runs).as_posix(), {})[sweep.name] = kept_bytes(sweep)
    compacted = any(files[f].get(PER_POSITION) != named.get(PER_POSITION) for f, named in before.items())
    if files != before or not records.exists():
        write_records(files, records)
    return Kept(copied, left, compacted)


def unpack(records: Path, dest: Path) -> tuple[int, int]:
    """The run directories of ``records`` under ``dest``: (folders written, folders left because ``dest``
    has them already). Each folder is written whole under a hidden name and renamed into place, so a run
    reader never sees part of one; a sweep's command already there is left as it is."""
    files, dest = read_records(records), Path(dest)
    written = left = 0
    for folder, named in sorted(files.items()):
        target = dest / folder
        if target.exists():
            left += 1
            continue
        staging = target.with_name(f".{target.name}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        make_dirs(staging)
        for name, data in named.items():
            (staging / name).write_bytes(data)
        staging.rename(target)
        written += 1
    return written, left


@contextlib.contextmanager
def as_folder(path: Path) -> Iterator[Path]:
    """A folder of runs to read: ``path`` itself, or a records file's run directories unpacked into a
    temporary folder for as long as the block runs."""
    path = Path(path)
    if path.suffix != SUFFIX:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="posbench-records-") as tmp:
        unpack(path, Path(tmp) / path.stem)
        yield Path(tmp) / path.stem


def listing(records: Path) -> list[str]:
    """One line per run folder: its folder, status and file names (a sweep's command folder: its files)."""
    import json

    lines = []
    for folder, named in sorted(read_records(records).items()):
        status = json.loads(named[METRICS]).get("status", "?") if METRICS in named else "-"
        lines.append(f"{folder}  {status}  {' '.join(sorted(named))}")
    return lines


def _checked(folder: str, path: Path) -> str:
    p = PurePosixPath(folder)
    if p.is_absolute() or ".." in p.parts or not str(folder):
        raise PosbenchError(f"records {str(path)!r} hold a folder {folder!r} outside their root; give records written by "
                            "posbench-records keep")
    return p.as_posix()


def _checked_name(name: str, path: Path) -> str:
    if not name or "/" in name or name in (".", ".."):
        raise PosbenchError(f"records {str(path)!r} hold a file named {name!r}; give records written by posbench-records keep")
    return name
