#!/usr/bin/env python
"""Count the report wing's modules and import arrows (ast; module-level and function-local imports of
posbench.report.*; an import of a package naming its submodule counts as the submodule), and the same
graph with each sub-package as one node. Usage: python scripts/report_imports.py [REPO] [-v] [-u]."""
import ast
import sys
from pathlib import Path
root = Path(sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else ".") / "posbench" / "report"
pkg = "posbench.report"
mods = {}
for p in sorted(root.rglob("*.py")):
    parts = p.relative_to(root.parent.parent).with_suffix("").parts
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    mods[name] = p
arrows = set()
for name, p in mods.items():
    for node in ast.walk(ast.parse(p.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for t in targets:
            if t.startswith(pkg) and t in mods and t != name:
                arrows.add((name, t))
# drop arrows to a package __init__ when the import names a submodule of it (from posbench.report.analysis import sweep)
nonempty = {n for n, p in mods.items() if p.name != "__init__.py" or p.read_text().strip().count("\n") > 3}
real = {(a, b) for a, b in arrows if not (mods[b].name == "__init__.py" and any(x == a and y.startswith(b + ".") for x, y in arrows))}
print(f"modules: {len(mods)} ({len([m for m in mods if mods[m].name != '__init__.py'])} not counting package __init__s)")
print(f"import arrows within report/: {len(real)}")
if "-v" in sys.argv:
    for a, b in sorted(real):
        print(f"  {a} -> {b}")
# the same graph with each sub-package of report/ as one node (a topic or shared layer as a unit)
def unit(m):
    rest = m[len(pkg) + 1:].split(".") if m != pkg else [""]
    return rest[0]
units = {unit(m) for m in mods if m != pkg}
uarrows = {(unit(a), unit(b)) for a, b in real if unit(a) != unit(b) and a != pkg and b != pkg}
print(f"units (top-level modules and sub-packages of report/): {len(units)}; arrows between units: {len(uarrows)}")
if "-u" in sys.argv:
    for a, b in sorted(uarrows):
        print(f"  {a} -> {b}")
