"""The house in layers (.importlinter, docs/layout.md): every import follows the data flow, function-local
ones included; no module is part of an import circle; the old import paths of the plug-in API still work.

import-linter (and grimp, its graph) read every import statement, at module level or inside functions,
so an import placed inside a function to dodge a circle is still an edge here."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

grimp = pytest.importorskip("grimp", reason="import-linter is in the test extra (pip install -e .[test])")

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / ".importlinter"


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter's own command on the package under ``root`` (a fresh process: grimp caches nothing)."""
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True))"
    return subprocess.run([sys.executable, "-c", code, str(CONTRACT)], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, timeout=300)


def test_the_layers_contract_holds():
    proc = lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 kept, 0 broken" in proc.stdout  # posbench's layers, the shims, the report's layers


def test_a_planted_upward_import_breaks_the_contract_with_the_names_that_tie_it(tmp_path):
    """The bottom layer importing the command line: the contract fails and names both modules."""
    copy = tmp_path / "posbench"
    shutil.copytree(ROOT / "posbench", copy, ignore=shutil.ignore_patterns("__pycache__", "conf"))
    errors = copy / "core" / "errors.py"
    errors.write_text(errors.read_text() + "\n\ndef _planted():\n    from posbench.cli import app  # noqa: F401\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0
    assert "posbench.core is not allowed to import posbench.cli" in proc.stdout
    assert "posbench.core.errors -> posbench.cli.app" in proc.stdout


def test_a_topic_of_the_report_importing_another_breaks_the_report_contract(tmp_path):
    """The report's topics sit side by side (posbench/report/__init__.py): the map reading the budget topic's
    section fails the report's contract, naming both modules; what two topics read belongs in analysis/."""
    copy = tmp_path / "posbench"
    shutil.copytree(ROOT / "posbench", copy, ignore=shutil.ignore_patterns("__pycache__", "conf"))
    words = copy / "report" / "map" / "words.py"
    words.write_text(words.read_text() + "\n\ndef _planted():\n    from posbench.report.budget import section  # noqa: F401\n")
    proc = lint_imports(tmp_path)
    assert proc.returncode != 0 and "2 kept, 1 broken" in proc.stdout
    assert "posbench.report.map is not allowed to import posbench.report.budget" in proc.stdout
    assert "posbench.report.map.words -> posbench.report.budget.section" in proc.stdout


def _circles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), in the import graph."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for m in sorted(graph.modules):
        if m not in index:
            visit(m)
    return out


def test_no_module_is_part_of_an_import_circle():
    """Within a layer too (the layers contract only sees imports between layers)."""
    graph = grimp.build_graph("posbench", cache_dir=None)
    assert _circles(graph) == []


def test_function_local_imports_of_posbench_say_why():
    """An import inside a function is allowed where a comment on its line says why (an optional heavy
    dependency, say); none of posbench's own modules needs one to dodge a circle any more."""
    unexplained = []
    for path in sorted((ROOT / "posbench").rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("posbench") \
                        and "#" not in lines[node.lineno - 1]:
                    unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert unexplained == []


def test_the_old_import_paths_of_the_plugin_api_still_work():
    """Plug-ins written against the flat layout keep importing what they used."""
    import posbench.errors
    import posbench.protocols
    import posbench.variants
    import posbench.variants.base
    import posbench.variants.rope_scalings
    from posbench.attention.options import AttentionOptions
    from posbench.attention.rope_scalings import ROPE_SCALINGS, _compute_yarn
    from posbench.core.errors import PosbenchError
    from posbench.evaluation.protocols import PROTOCOLS
    from posbench.evaluation.protocols.base import Protocol
    from posbench.evaluation.variants import register
    from posbench.evaluation.variants.base import Variant
    from posbench.evaluation.windows import WindowPlan

    assert posbench.errors.PosbenchError is PosbenchError
    assert (posbench.protocols.PROTOCOLS, posbench.protocols.Protocol, posbench.protocols.WindowPlan) == (
        PROTOCOLS, Protocol, WindowPlan)
    assert (posbench.variants.Variant, posbench.variants.register, posbench.variants.AttentionOptions) == (
        Variant, register, AttentionOptions)
    assert posbench.variants.base.Variant is Variant
    assert posbench.variants.rope_scalings.ROPE_SCALINGS is ROPE_SCALINGS
    assert posbench.variants.rope_scalings._compute_yarn is _compute_yarn


@pytest.mark.parametrize("registry", ["encodings", "tasks", "variants", "protocols", "rope_scalings", "sections"])
def test_each_builtin_plugin_is_one_file_that_registers_itself(registry):
    """Adding an encoding, task, variant, protocol or report section is one new module in its package
    (found by the registry's discovery), with no list elsewhere to edit. A registry with a ``topic_module``
    (report sections: ``section``) also finds that module in each package beside its own: a report topic
    is one folder, posbench/report/<topic>/ with its section.py, and nothing here lists the topics."""
    from posbench.attention.rope_scalings import ROPE_SCALINGS
    from posbench.encodings import ENCODINGS
    from posbench.evaluation.protocols import PROTOCOLS
    from posbench.evaluation.variants import VARIANTS
    from posbench.report.section import SECTIONS
    from posbench.tasks import TASKS

    reg = {"encodings": ENCODINGS, "tasks": TASKS, "variants": VARIANTS, "protocols": PROTOCOLS,
           "rope_scalings": ROPE_SCALINGS, "sections": SECTIONS}[registry]
    names = reg.builtins()
    assert names
    if registry == "rope_scalings":  # one compute function each, in one table like HF's modeling_rope_utils
        return
    package = Path(sys.modules[reg.builtin_package].__file__).parent
    modules = {p.stem for p in package.glob("*.py")}
    beside = reg.builtin_package.rpartition(".")[0]
    for name in names:
        home, _, leaf = reg.get(name).__module__.rpartition(".")
        if home == reg.builtin_package:
            assert leaf in modules, name
        else:  # only a topic package's own module, one level below the built-in package's parent
            assert reg.topic_module is not None and leaf == reg.topic_module, (name, home, leaf)
            assert home.rpartition(".")[0] == beside and (package.parent / home.rpartition(".")[2] / f"{leaf}.py").is_file()
    if reg.topic_module:  # and every topic's module is found: a new topic folder with one is in the registry
        topics = {p.parent.name for p in package.parent.glob(f"*/{reg.topic_module}.py")}
        assert topics and topics == {reg.get(n).__module__.rpartition(".")[0].rpartition(".")[2] for n in names} - {package.name}


SHIMS = ("posbench.errors", "posbench.params", "posbench.protocols", "posbench.variants")  # the plug-in API's old import paths


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _defines_nothing(tree: ast.Module) -> bool:
    """A docstring and ``from __future__`` at most: an empty package ``__init__``, say."""
    return all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
               or isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in tree.body)


def test_every_module_is_imported_by_a_test():
    """Each module of posbench (its configs and the shims of the old import paths aside) is imported by
    at least one test file, by name: ``import posbench.x``, or ``from posbench.x import y`` where y may
    be a submodule, at module level or inside a test. A module whose behaviour is only reached through
    a registry or another module has no test that says what it is for."""
    modules = set()
    for path in sorted((ROOT / "posbench").rglob("*.py")):
        name = _module_name(path)
        if name.startswith("posbench.conf") or any(name == s or name.startswith(s + ".") for s in SHIMS):
            continue
        if not _defines_nothing(ast.parse(path.read_text())):
            modules.add(name)
    imported = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    untested = sorted(m for m in modules - imported if not _covered_by_its_registry(m))
    assert untested == [], f"no test file imports {', '.join(untested)}"


# A built-in plug-in is one file in its package, found by its registry: the test that runs over every name
# of that registry tests a new one with no test edited (the "one new file" for each kind).
EVERY_BUILTIN = {
    "posbench.encodings": "tests/encodings/test_encodings.py (causality, shapes, every length, for each name)",
    "posbench.tasks": "tests/tasks/test_tasks.py::test_every_task_makes_batches_of_the_window_asked_for",
    "posbench.evaluation.variants": "tests/evaluation/variants/test_variants.py::test_every_variant_names_its_row_and_"
                                    "changes_only_the_forward_options",
    "posbench.evaluation.protocols": "tests/evaluation/protocols/test_protocols.py::test_every_protocol_scores_the_"
                                     "same_targets_at_every_length",
    "posbench.report.sections": "tests/report/test_pipeline.py::test_every_section_says_whether_it_applies_and_writes_"
                                "only_the_files_it_declares",
}


def _covered_by_its_registry(module: str) -> bool:
    """A built-in's module, run by its registry's test; a report topic's section.py is one (SECTIONS finds
    it beside posbench/report/sections/, and the sections' test runs every section it finds)."""
    from posbench.report.section import SECTIONS

    package, _, leaf = module.rpartition(".")
    topic_section = leaf == SECTIONS.topic_module and package.rpartition(".")[0] == SECTIONS.builtin_package.rpartition(".")[0]
    return package in EVERY_BUILTIN and leaf not in ("base", "__init__") or topic_section


def test_the_tests_that_run_over_every_builtin_exist():
    for where in EVERY_BUILTIN.values():
        path, _, test = where.partition("::")
        text = (ROOT / path.split(" ")[0]).read_text()
        assert (f"def {test}(" in text) if test else "available()" in text, where
