"""Scripts read the report through its public layers (posbench/report/__init__.py): records/ (runs and
committed records in), analysis/ and drawing/ (what two or more topics read), the context, the pipeline and
the results index, and a topic's computing modules; never a section (``sections/`` or a topic's
``section.py``: a report's words and layout, which change with it). And every script that reads the report
has a test that runs it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ("posbench.report.records", "posbench.report.analysis", "posbench.report.drawing", "posbench.report.context",
          "posbench.report.pipeline", "posbench.report.index")
TOPICS = ("budget", "comparison", "extension", "forecast", "key_tokens", "map", "rope_base", "tasks")


def report_imports(path: Path) -> list[str]:
    """The posbench.report modules a script imports (``from X import y`` counts y where it is a module)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("posbench.report")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("posbench.report"):
            subs = [f"{node.module}.{a.name}" for a in node.names
                    if (ROOT / Path(*f"{node.module}.{a.name}".split("."))).with_suffix(".py").is_file()]
            out += subs or [node.module]
    return out


def allowed(module: str) -> bool:
    parts = module.split(".")
    if any(module == p or module.startswith(p + ".") for p in PUBLIC):
        return True
    return len(parts) == 4 and parts[2] in TOPICS and parts[3] != "section"


READERS = sorted(p for p in (ROOT / "scripts").glob("*.py") if report_imports(p))


def test_the_rule_tells_public_modules_from_sections():
    assert allowed("posbench.report.records.load") and allowed("posbench.report.analysis.tokenizers")
    assert allowed("posbench.report.forecast.law") and allowed("posbench.report.pipeline")
    assert not allowed("posbench.report.sections.tokenizers") and not allowed("posbench.report.map.section")
    assert len(READERS) >= 8  # the scripts that read the report (convert_manifests.py, rate_choice.py, ...)


@pytest.mark.parametrize("path", READERS, ids=lambda p: p.name)
def test_a_script_reads_the_report_through_its_public_layers(path):
    assert [m for m in report_imports(path) if not allowed(m)] == []


@pytest.mark.parametrize("path", READERS, ids=lambda p: p.name)
def test_a_script_that_reads_the_report_has_a_test(path):
    named = (f"{path.stem}.py", f'script("{path.stem}")', f'"scripts" / "{path.name}"')
    tests = [t for t in (ROOT / "tests").rglob("test_*.py") if t.name != Path(__file__).name
             and any(n in t.read_text() for n in named)]
    assert tests, f"no test runs scripts/{path.name}"
