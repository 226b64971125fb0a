"""Scripts under scripts/ are not a package: each test loads its script as a module and runs its ``main``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture
def script():
    """``script("name")``: scripts/name.py loaded as a module (its ``main`` not run)."""
    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"script_{name}", SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return load
