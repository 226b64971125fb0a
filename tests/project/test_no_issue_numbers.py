"""Code, configs and docs say what a thing is, not which issue asked for it: an issue number means
nothing to a reader without the tracker (results/ keeps its history: a study's COMMAND.md may name the
work it came from)."""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ISSUE = re.compile(r"\b[Ii]ssues? \d+\b")


def test_no_issue_number_in_code_configs_or_docs():
    try:
        listed = subprocess.run(["git", "ls-files", "posbench", "scripts", "tests", "docs", "README.md", "conf"],
                                cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    hits = [f"{name}:{i}" for name in listed if (ROOT / name).is_file() and name.endswith((".py", ".yaml", ".md", ".sh"))
            for i, line in enumerate((ROOT / name).read_text().splitlines(), 1)
            if ISSUE.search(line) and name != "tests/project/test_no_issue_numbers.py"]
    assert not hits, f"issue numbers in {len(hits)} lines, e.g. {hits[:5]}: say what, not which issue"
