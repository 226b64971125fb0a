"""Write docs/layout.md from the code: the layers as .importlinter declares them, every module of
posbench/ with the first sentence of its docstring, and the plug-in packages with the names their
modules register. Nothing in docs/layout.md is written by hand but the preamble below.

    python scripts/layout.py            # write docs/layout.md
    python scripts/layout.py --check    # exit 1, with one line, when docs/layout.md is not what this writes

tests/project/test_docs.py checks that docs/layout.md is current: edit a module's docstring (or a
layer's line here), then run this.
"""

from __future__ import annotations

import argparse
import ast
import configparser
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "posbench"
LAYOUT = ROOT / "docs" / "layout.md"
WIDTH = 110  # of a line of the module tree
COLUMN = 30  # where the sentences start

PREAMBLE = """\
# Module layout

Written by `scripts/layout.py` from the code (the layers from `.importlinter`, each module's docstring,
the registries): edit those and run `python scripts/layout.py`; `tests/project/test_docs.py` checks that
this file is current.

Data flows one way: config -> corpus -> model + encoding -> training -> run directory -> evaluation ->
run directory -> report. The report never trains; the trainer never plots. Below the command line no
part of training or evaluation receives a Hydra `DictConfig`: each part gets the frozen settings it uses
(`posbench/spec.py`), made once from the composed config. The report, a command of its own, reads the
runs' saved `config.yaml` and `metrics.json`.
"""

# what each layer of .importlinter is for (a layer there without a line here is an error)
LAYER_ROLES = {
    "posbench.cli": "the command lines: Hydra composition, every job checked before the first starts, one-line "
                    "errors, --help and --version",
    "posbench.hf": "Hugging Face checkpoints (optional transformers): a local causal LM scored into a run directory "
                   "(posbench-eval-hf), posbench's rope/nope runs exported as GPT-NeoX (posbench-export)",
    "posbench.jobs": "what a command does with runs: train (with budget branches), evaluate, the corpus a run was "
                     "made from, the line each run prints, the LongRoPE factor search",
    "posbench.report": "posbench-report: the runs read once, the statistics, the sections with their tables and "
                       "figures, report.md and report.html",
    "posbench.spec": "RunSpec: everything one run is, made once from a resolved config (new or saved), and the "
                     "checks across its parts",
    "posbench.evaluation": "scoring a trained model: protocols, evaluation rows (variants), perplexity, task "
                           "accuracy, attention diagnostics",
    "posbench.training": "the training loop, its learning-rate schedules, and extension runs",
    "posbench.model": "the decoder language model (and the benchmark's plain reference GPT)",
    "posbench.tasks": "language modelling and the synthetic tasks, one module each",
    "posbench.encodings": "the positional encodings, one module each, plugged into the model through hooks",
    "posbench.mixers": "sequence mixers beside attention (recurrent layers: Gated DeltaNet, Mamba-2), one module "
                       "each, chosen per layer by model.mixers",
    "posbench.attention": "attention kernels and what a forward pass tells them: options, RoPE scalings, LongRoPE "
                          "factors, temperatures, positions",
    "posbench.store": "the run directory: run ids, metrics, checkpoints, resume states, the lock",
    "posbench.data": "corpora, tokenizers and token caches, training batches",
    "posbench.core": "what every layer uses: errors, settings, registries, files, device, progress, tracking",
}

# the registries of the plug-in packages: (package, registry module, registry name, what one is)
PLUGINS = [
    ("posbench/encodings", "posbench.encodings", "ENCODINGS", "positional encodings"),
    ("posbench/tasks", "posbench.tasks", "TASKS", "tasks"),
    ("posbench/evaluation/variants", "posbench.evaluation.variants", "VARIANTS", "evaluation variants (rows)"),
    ("posbench/evaluation/protocols", "posbench.evaluation.protocols", "PROTOCOLS", "evaluation protocols"),
    ("posbench/report/sections", "posbench.report.section", "SECTIONS", "report sections"),
]

AROUND = """\
conf                          a link to posbench/conf
tests/                        a test folder per layer of posbench/, a test file per module it specifies, tests/
                              end_to_end for whole commands, tests/project for the repository (docs/testing.md)
results/                      committed reports, each with the COMMAND.md that made it
docs/                         this reference
.ci/run                       CI: bash scripts/test.sh
"""

# a full stop ends a sentence where a space and no digit follow it, but not after these abbreviations
END = r"(?<!\be\.g)(?<!\bi\.e)(?<!\bal)(?<!\bvs)(?<!\bcf)(?<!\beq)(?<=[^\s.])[.!?](?=\s+[^\s\d]|$)"


def first_sentence(doc: str) -> str:
    """The docstring's first sentence (of its first paragraph), without reST markup; one that leads into
    a formula or a list (``...:``) ends there."""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    match = re.search(END, paragraph)
    sentence = (paragraph[: match.end()] if match else paragraph).replace("``", "")
    return sentence.rstrip(":") + "." if sentence.endswith(":") else sentence


def wrapped(text: str, indent: str = "") -> list[str]:
    """A markdown paragraph (or list item) wrapped as the hand-written docs are."""
    return textwrap.wrap(text, 105, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False)


def docstring(path: Path) -> str | None:
    return ast.get_docstring(ast.parse(path.read_text()))


def entry(name: str, depth: int, text: str) -> list[str]:
    """One line of the tree (wrapped, the sentence in its column)."""
    head = "  " * depth + name
    if not text:
        return [head]
    lines = textwrap.wrap(text, WIDTH - COLUMN, break_on_hyphens=False)
    if len(head) >= COLUMN - 1:
        return [head] + [" " * COLUMN + line for line in lines]
    return [head.ljust(COLUMN) + lines[0]] + [" " * COLUMN + line for line in lines[1:]]


def layers() -> list[list[str]]:
    """The layers of .importlinter's layers contract, top to bottom (modules of one layer together)."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    text = config["importlinter:contract:layers"]["layers"]
    return [[m.strip() for m in line.split("|")] for line in text.strip().splitlines() if line.strip()]


def layer_lines() -> list[str]:
    out = []
    for layer in layers():
        for module in layer:
            if module not in LAYER_ROLES:
                raise SystemExit(f"layout: .importlinter has layer {module}, which scripts/layout.py does not describe "
                                 "(LAYER_ROLES)")
        names = " | ".join(f"`{m.removeprefix('posbench.')}`" for m in layer)
        roles = LAYER_ROLES[layer[0]] if len(layer) == 1 else \
            "; ".join(f"{LAYER_ROLES[m]} (`{m.removeprefix('posbench.')}`)" for m in layer)
        out += wrapped(f"- {names}: {roles}", "  ")
    return out


def tree(folder: Path, depth: int) -> list[str]:
    """The modules of ``folder`` (a package), then its subpackages, each with its first sentence."""
    out = []
    modules = sorted(p for p in folder.glob("*.py"))
    packages = sorted(p for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    for path in modules:
        doc = docstring(path)
        if path.name == "__init__.py" and not doc:
            continue  # an empty package module: the folder's line says what the package is
        if not doc:
            raise SystemExit(f"layout: {path.relative_to(ROOT)} has no docstring; give it one (its first sentence "
                             "is its line in docs/layout.md)")
        out += entry(path.name, depth, first_sentence(doc))
    for package in packages:
        name = ".".join(package.relative_to(ROOT).parts)
        out += entry(package.name + "/", depth, LAYER_ROLES.get(name, ""))
        out += tree(package, depth + 1)
    return out


def plugin_lines() -> list[str]:
    import importlib

    sys.path.insert(0, str(ROOT))
    out = []
    for folder, module, attr, what in PLUGINS:
        registry = getattr(importlib.import_module(module), attr)
        by_module: dict[str, list[str]] = {}
        in_topics: dict[str, list[str]] = {}  # a topic package's own module beside the folder (registry.topic_module)
        for name in registry.builtins():
            home, _, leaf = registry.get(name).__module__.rpartition(".")
            if home == registry.builtin_package:
                by_module.setdefault(leaf + ".py", []).append(name)
            else:
                in_topics.setdefault(f"{home.rpartition('.')[2]}/{leaf}.py", []).append(name)
        listed = ", ".join(f"{m} ({', '.join(f'`{n}`' for n in names)})" for m, names in sorted(by_module.items()))
        if in_topics:
            listed += "; and in the topic packages beside it: " + ", ".join(
                f"{m} ({', '.join(f'`{n}`' for n in names)})" for m, names in sorted(in_topics.items()))
        out += wrapped(f"- `{folder}/`, {what} (`{module}.{attr}`; other packages' through the entry-point group "
                       f"`{registry.group}`): {listed}.", "  ")
    return out


def script_lines() -> list[str]:
    out = []
    for path in sorted((ROOT / "scripts").iterdir()):
        if path.suffix == ".py":
            text = first_sentence(docstring(path) or "")
        elif path.suffix == ".sh":  # the comment under the shebang
            header = []
            for line in path.read_text().splitlines()[1:]:
                if not line.startswith("#") or not line[1:].strip():
                    break
                header.append(line[1:].strip())
            text = first_sentence(" ".join(header))
        else:
            continue
        out += entry(path.name, 1, text)
    return out


def layout() -> str:
    lines = [PREAMBLE, "## Layers", "",
             *wrapped("posbench's modules sit in layers (`.importlinter`, checked by "
                      "`tests/project/test_architecture.py`): a module imports only from the layers below its own, "
                      "function-local imports included, and no module is part of an import circle. Layers side by "
                      "side (`|`) do not import each other. Top to bottom:"), "",
             *layer_lines(), "", "## Modules", "",
             *wrapped("Each module with the first sentence of its docstring. The shims `errors.py`, `protocols.py` "
                      "and `variants/` keep the old import paths of the plug-in API for plug-ins; posbench itself "
                      "does not import them."), "", "```", "posbench/",
             *entry("conf/", 1, "Hydra's yaml, shipped inside the package: config.yaml (posbench-train), evaluate.yaml "
                                "(posbench-eval), the config groups, experiment/ presets, hydra/ launchers and logging"),
             *tree(PACKAGE, 1), "```", "", "## Plug-in packages", "",
             *wrapped("A built-in is one module of its package that registers itself under a name "
                      "(`posbench/core/registry.py`); another package adds one through an entry point or a "
                      "`module:attr` path (docs/extending.md)."), "",
             *plugin_lines(), "", "## Around the package", "", "```", "scripts/", *script_lines(), AROUND.rstrip(), "```"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description="Write docs/layout.md from the code.")
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/layout.md is not what would be written")
    args = parser.parse_args()
    text = layout()
    if args.check:
        if not LAYOUT.exists() or LAYOUT.read_text() != text:
            print("docs/layout.md is out of date with the code: run python scripts/layout.py", file=sys.stderr)
            return 1
        return 0
    LAYOUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
