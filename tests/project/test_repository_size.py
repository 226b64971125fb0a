"""The repository stays small enough to travel and to grow: a GPU call carries the working tree, the
wheels in `.whl/` and the corpus in `.gpu_data/` together under 64 MiB (docs/testing.md). The tracked
files keep to 35 MiB (32 MiB on 2026-11-29, once the studies' run folders became records files,
posbench/store/records.py, and report.html linked its figures rather than embedding them; 33.5 MiB used on 2026-11-29, back to 29.6
once records kept their per-position curves in float16): the rest is the room the next studies need, and a
study that needs more compacts its records first."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT_MIB = 35


def test_the_tracked_files_leave_room_for_what_a_gpu_call_carries():
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = [ROOT / name for name in listed.decode().split("\0") if name]
    size = sum(f.stat().st_size for f in files if f.is_file())
    largest = sorted(files, key=lambda f: f.stat().st_size if f.is_file() else 0)[-3:]
    assert size / 2**20 < LIMIT_MIB, (f"the tracked files take {size / 2**20:.1f} MiB (limit {LIMIT_MIB}); largest: "
                                      + ", ".join(str(f.relative_to(ROOT)) for f in largest))
