"""The docs stay true to the code. docs/layout.md is what scripts/layout.py writes from it. Every command
of the README's bash blocks runs, in tiny form: each posbench-* line with overrides
that make it small (tiny model, a few steps, a local corpus, a temporary runs folder), its paths
and placeholders pointed at what the earlier lines made. A line that is not a posbench command
must be named in SKIPPED with the reason, so a new command in the README is run by default."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import write_text_corpus

README = Path(__file__).resolve().parents[2] / "README.md"
MODULES = {"posbench-train": "posbench.cli.train", "posbench-eval": "posbench.cli.evaluate", "posbench-report": "posbench.cli.report"}

SKIPPED = {  # line (without its comment) -> why it is not run here
    "bash scripts/quickstart.sh": "installs and trains the 10-minute quick sweep (CI runs scripts/test.sh)",
    "bash scripts/test.sh": "the test suite itself",
    "python3 -m venv .venv": "installation",
    ".venv/bin/pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cu128": "a CUDA build of torch (GPU)",
    "bash scripts/setup.sh": "installation",
    "posbench-eval-hf ~/models/my-llama --out runs/hf --rope-scaling yarn --window && posbench-report runs/hf":
        "a checkpoint of the user's (tests/hf scores tiny made-up checkpoints of each family with these flags)",
    "posbench-train encoding=mypkg.encodings:LogDistanceBias 'eval.variants=[mypkg.variants:WideWindow]'":
        "the user's own package (tests/end_to_end/test_plugins.py runs plug-ins named by module:attr)",
}

# replace the value of a key the command sets, else append: small, fast and inside the test's folders
TINY_TRAIN = {"model": "tiny", "train": "smoke", "train.steps": "5", "train_len": "16", "seed": "0", "data": "local",
              "eval.scored_tokens": "256", "eval.first_scored": "null"}
TINY_SWEEP = {"encoding": "rope,alibi"}  # a sweep over every encoding (a preset's too) shrinks to two
TINY_EVAL = {"eval.scored_tokens": "256"}


def readme_commands() -> list[str]:
    """The lines of the README's bash blocks, comments removed; ``.venv/bin/posbench-*`` is the command
    itself (the README's first lines call it before the venv is activated)."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), re.S):
        for line in block.splitlines():
            line = re.sub(r"^\.venv/bin/(posbench-)", r"\1", re.sub(r"\s+#.*$", "", line).strip())
            if line and not line.startswith("#"):
                lines.append(line)
    return lines


def with_tiny(args: list[str], tiny: dict[str, str]) -> list[str]:
    out, seen = [], set()
    for arg in args:
        key, sep, _ = arg.partition("=")
        if sep and key in tiny:
            out.append(f"{key}={tiny[key]}")
            seen.add(key)
        else:
            out.append(arg)
    return out + [f"{k}={v}" for k, v in tiny.items() if k not in seen]


def test_every_readme_line_is_run_or_skipped_with_a_reason():
    lines = readme_commands()
    assert len([c for c in lines if "posbench-" in c]) >= 8
    for line in lines:
        words = [w for w in shlex.split(line) if not re.fullmatch(r"[A-Z_]+=\S*", w)]
        assert words[0] in MODULES or line in SKIPPED, f"README line neither run by this test nor skipped: {line}"
    assert set(SKIPPED) <= set(lines), "SKIPPED names a line the README no longer has"


def test_the_readme_commands_run_in_tiny_form(tmp_path, cache_dir):
    corpus = write_text_corpus(tmp_path / "docs", n_docs=160)  # validation text for 32x windows from token 2048
    runs, results = tmp_path / "runs", tmp_path / "results"
    conf = tmp_path / "my-conf" / "experiment"  # the README's own config folder, with its preset
    conf.mkdir(parents=True)
    (conf / "my_preset.yaml").write_text("# @package _global_\nseed: 0\n")
    ran = []
    for line in readme_commands():
        if line in SKIPPED:
            continue
        words = shlex.split(line)
        env = dict(w.split("=", 1) for w in words if re.fullmatch(r"[A-Z_]+=\S*", w))
        program, *args = [w for w in words if not re.fullmatch(r"[A-Z_]+=\S*", w)]
        args = [a.replace("file:///home/me/posbench-conf", f"file://{conf.parent}") for a in args]
        if program == "posbench-train":
            tiny = {**TINY_TRAIN, **(TINY_SWEEP if "-m" in args else {}), "data.path": str(corpus), "runs_dir": str(runs)}
            args = with_tiny(args, tiny)
        elif program == "posbench-eval":
            # <run_id>: the rope run the lines above trained (the eval examples include RoPE scalings)
            rope = sorted(runs.glob("rope_tiny_L16_s0_*"))[0]
            args = with_tiny([a.replace("runs/<run_id>", str(rope)).replace("run_dir=runs/quick", f"run_dir={runs}")
                              for a in args], TINY_EVAL)
        else:  # posbench-report <runs folder or a committed records file> [--out <folder>]
            args = [str(README.parent / a) if a.endswith(".parquet") else str(tmp_path / "b") if a == "/tmp/b"
                    else str(runs) if a.startswith("runs/") else str(results / Path(a).name) if a.startswith("results/")
                    else a for a in args]
        proc = subprocess.run([sys.executable, "-m", MODULES[program], *args], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, **env, "PYTHONUNBUFFERED": "1"}, timeout=600)
        assert proc.returncode == 0, f"{line}\n  ran as: {' '.join(args)}\n{proc.stderr[-3000:]}"
        ran.append(line)
    assert len(ran) == len([line for line in readme_commands() if line not in SKIPPED])  # a skipped line may recur
    assert (runs / "report" / "report.md").exists() and (results / "reference" / "report.md").exists()


def test_docs_layout_md_is_what_scripts_layout_py_writes_from_the_code():
    """docs/layout.md: the layers of .importlinter, every module with its docstring's first sentence, and
    the names each plug-in package registers, written by scripts/layout.py. The suite never writes a tracked
    file: on a contributor's machine a stale layout.md is a warning with the command that rewrites it; under
    CI (CI=true) it fails, so what is committed always matches the code."""
    import warnings

    from tests.helpers import load_script

    layout = load_script("layout")
    written, current = README.parent / "docs" / "layout.md", layout.layout()
    if written.read_text() != current:
        assert os.environ.get("CI") != "true", "docs/layout.md is out of date with the code: run python scripts/layout.py"
        warnings.warn("docs/layout.md is out of date with the code: run python scripts/layout.py and commit it")
        return
    proc = subprocess.run([sys.executable, str(README.parent / "scripts" / "layout.py"), "--check"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(README.parent)})
    assert proc.returncode == 0 and proc.stderr == ""


def test_the_encoding_docs_extending_md_shows_imports_builds_and_checks_its_parameter(tmp_path, monkeypatch):
    """The plug-in a user copies from docs/extending.md works as written: its imports exist, it builds,
    its bias is the formula its docstring gives, and its parameter rule refuses a bad value."""
    import importlib
    import math

    import pytest
    import torch

    from posbench.core.errors import PosbenchError
    from posbench.core.params import make_typed
    from posbench.encodings import ModelShape

    text = (README.parent / "docs" / "extending.md").read_text()
    code = re.search(r"```python\n# mypkg/encodings\.py\n(.*?)```", text, re.S).group(1)
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "encodings.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    cls = importlib.import_module("mypkg.encodings").LogDistanceBias
    enc = cls(ModelShape(32, 4, 2, 16, 64), make_typed("encoding", "logbias", cls.Params, {"slope": 0.5}))
    bias = enc.bias(torch.arange(4), torch.arange(4), 0)
    assert bias.shape == (4, 4, 4) and bias[0, 3, 0].item() == pytest.approx(-0.5 * 0.5 * math.log(4))
    with pytest.raises(PosbenchError, match="must be positive"):
        make_typed("encoding", "logbias", cls.Params, {"slope": 0})


def test_docs_report_md_describes_every_file_a_report_section_writes():
    """Each file a built-in report section declares (``Section.files``) is a row of a table in
    docs/report.md (Figures or Files), so a reader of a report folder can look every file up there."""
    from posbench.report.section import SECTIONS

    doc = (README.parent / "docs" / "report.md").read_text()
    described = {name for line in doc.splitlines() if line.startswith("| `")
                 for name in re.findall(r"`([^`]+)`", line.split("|")[1])}
    declared = {f.name for name in SECTIONS.builtins() for f in SECTIONS.get(name).files}
    assert declared - described == set(), "files a section writes that docs/report.md's tables do not list"


def test_the_readme_answers_first_and_fits_on_a_few_screens():
    """README is the front page: at most 15 KB (the sentences behind its tables live in results/README.md),
    the install and first-run commands within its first 40 lines, and no table cell longer than a short
    answer (a verdict word and its numbers)."""
    text = README.read_text()
    assert len(text.encode()) <= 15_000, len(text.encode())
    first = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("bash scripts/setup.sh"))
    assert first < 40
    cells = [c.strip() for line in text.splitlines() if line.startswith("|") for c in line.strip("|").split("|")]
    assert max(len(c) for c in cells) <= 60, max(cells, key=len)
