"""Methods from outside posbench: an encoding, an evaluation variant and a task defined in packages
installed apart from the repository train, evaluate and reach the report, with no posbench file
changed. One package is found through its entry points (``posbench.encodings``,
``posbench.variants``, ``posbench.tasks``), the other through ``module:attr`` paths on the command
line. And posbench itself, installed without the repository (``pip install .``), runs a sweep."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import cli

SOURCE = Path(__file__).with_name("plugin_source.py")
SMOKE = ["model=tiny", "train=smoke", "train.steps=6", "eval.multiples=[1,2]", "eval.protocols=[nonoverlapping]",
         "eval.scored_tokens=256", "eval.bca=[]", "threads=1", "data=local"]


def install(site: Path, package: str, entry_points: dict[str, dict[str, str]] | None = None) -> None:
    """What pip leaves behind for a package: its code, and a .dist-info naming its entry points."""
    (site / package).mkdir(parents=True)
    shutil.copy(SOURCE, site / package / "__init__.py")
    if entry_points:
        info = site / f"{package}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text("".join(
            f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in eps.items()) + "\n"
            for group, eps in entry_points.items()))


@pytest.fixture(scope="module")
def plugin_runs(tmp_path_factory, text_corpus, cache_dir):
    site = tmp_path_factory.mktemp("site-packages")
    install(site, "posbench_demo_ep", {
        "posbench.encodings": {"demo_bias": "posbench_demo_ep:LogDistanceBias"},
        "posbench.variants": {"demo_wide": "posbench_demo_ep:WideWindow"},
        "posbench.tasks": {"demo_first": "posbench_demo_ep:FirstLetter"},
    })
    install(site, "posbench_demo_paths")
    runs = tmp_path_factory.mktemp("plugin-runs")
    env = {"PYTHONPATH": str(site)}
    common = [*SMOKE, f"data.path={text_corpus}", f"runs_dir={runs}"]
    cli("posbench.cli.train", "-m", "encoding=demo_bias,alibi", "train_len=16", "eval.variants=[demo_wide]", *common, env=env)
    cli("posbench.cli.train", "encoding=posbench_demo_paths:LogDistanceBias", "train_len=16",
        "eval.variants=[posbench_demo_paths:WideWindow]", *common, env=env)
    cli("posbench.cli.train", "encoding=demo_bias", "task=demo_first", "train_len=24", *common, env=env)
    cli("posbench.cli.train", "encoding=nope", "task=posbench_demo_paths:FirstLetter", "train_len=24", *common, env=env)
    out = tmp_path_factory.mktemp("plugin-report")
    cli("posbench.cli.report", str(runs), "--out", str(out), env=env)
    return site, runs, out, env


def test_plugin_encodings_and_variants_have_their_rows(plugin_runs):
    _, _, out, _ = plugin_runs
    rows = set(pd.read_csv(out / "table.csv")["variant"])
    assert {"demo_bias", "demo_bias+wide1", "alibi", "alibi+wide1", "posbench_demo_paths:LogDistanceBias",
            "posbench_demo_paths:LogDistanceBias+wide1"} <= rows


def test_plugin_tasks_are_trained_and_scored(plugin_runs):
    _, runs, out, _ = plugin_runs
    tasks = pd.read_csv(out / "task_records.csv")
    assert {"demo_first", "posbench_demo_paths:FirstLetter"} <= set(tasks["task"])
    run_dirs = {p.name for p in runs.iterdir()}
    assert any(n.startswith("demo_bias_tiny_L24_s0_demo_first_") for n in run_dirs), run_dirs
    assert any(n.startswith("posbench_demo_paths-LogDistanceBias_tiny_L16_") for n in run_dirs), run_dirs


def test_a_plugin_run_records_its_rows_and_evaluates_again(plugin_runs):
    _, runs, _, env = plugin_runs
    (run_dir,) = [p for p in runs.iterdir() if p.name.startswith("demo_bias_tiny_L16_")]
    records = json.loads((run_dir / "metrics.json").read_text())["evaluations"]
    wide = [r for r in records if r["variant"] == "demo_bias+wide1"]
    assert wide and wide[0]["row"] == {"encoding": "demo_bias", "tag": "",
                                       "variants": [{"variant": "demo_wide", "blocks": 1}]}
    cli("posbench.cli.evaluate", f"run_dir={run_dir}", "eval.multiples=[1,2,4]", "eval.protocols=[nonoverlapping]",
        "eval.scored_tokens=256", "eval.bca=[]", "eval.variants=[demo_wide]", env=env)
    lengths = {r["length"] for r in json.loads((run_dir / "metrics.json").read_text())["evaluations"]
               if r["variant"] == "demo_bias+wide1"}
    assert lengths == {16, 32, 64}


def test_a_plugin_cannot_take_a_builtin_name(plugin_runs, tmp_path):
    """Built-ins win a clash: an entry point named like a built-in is never loaded for it."""
    site, _, _, env = plugin_runs
    install(tmp_path, "posbench_demo_clash", {"posbench.encodings": {"alibi": "posbench_demo_clash:LogDistanceBias"}})
    code = ("from posbench.encodings import encoding_class; import posbench.encodings.alibi as a; "
            "assert encoding_class('alibi') is a.ALiBi; print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}:{site}"})
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_an_unknown_plugin_is_one_line(tmp_path, text_corpus):
    proc = cli("posbench.cli.train", "encoding=nosuchpkg.enc:Thing", f"data.path={text_corpus}", "data=local",
               f"runs_dir={tmp_path / 'runs'}", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "posbench: error: cannot import 'nosuchpkg.enc' for 'nosuchpkg.enc:Thing' (No module named 'nosuchpkg'); "
        "is its package installed?"]
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_a_non_editable_install_runs_a_sweep_and_the_report(tmp_path, text_corpus, cache_dir):
    """``pip install .`` (no editable link to the repository): the configs ship inside the package."""
    repo = Path(__file__).resolve().parents[2]
    target = tmp_path / "installed"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                    str(target), str(repo)], check=True, capture_output=True, text=True)
    env = {"PYTHONPATH": str(target)}
    elsewhere = tmp_path / "elsewhere"  # not the repository: nothing of it on the path
    elsewhere.mkdir()
    where = subprocess.run([sys.executable, "-c", "import posbench; print(posbench.__file__)"], cwd=elsewhere,
                           env={**os.environ, **env}, capture_output=True, text=True, check=True)
    assert where.stdout.strip().startswith(str(target))
    runs = tmp_path / "runs"
    cli("posbench.cli.train", "-m", "encoding=nope,alibi", "train_len=16", *SMOKE, f"data.path={text_corpus}",
        f"runs_dir={runs}", cwd=elsewhere, env=env)
    cli("posbench.cli.report", str(runs), "--out", str(tmp_path / "report"), cwd=elsewhere, env=env)
    assert (tmp_path / "report" / "report.md").is_file()


def test_plugins_get_their_own_family_colour_and_line(plugin_runs):
    """The report styles a plug-in's rows from its classes: the encoding's family and a colour of
    its own (derived from its name, none of the built-ins'), the variant's colour and line."""
    site, _, _, env = plugin_runs
    code = """
from posbench.encodings import ENCODINGS
from posbench.report.drawing.style import row_style
from posbench.report.records.rows import remember_row
builtin = {c.colour for _, c in ENCODINGS.items()}
enc = row_style("demo_bias")
assert enc.family == "plug-in family" and enc.colour not in builtin, enc
remember_row("demo_bias+wide1", {"encoding": "demo_bias", "tag": "", "variants": [{"variant": "demo_wide", "blocks": 1}]})
wide = row_style("demo_bias+wide1")
assert (wide.family, wide.colour, wide.linestyle) == ("plug-in family", "#123456", "--"), wide
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env})
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


def test_a_yaml_less_plugin_s_parameters_are_set_without_plus(cache_dir, tmp_path, monkeypatch, forget_loaded_plugins):
    """docs/extending.md's ``encoding=logbias encoding.slope=0.5``: the option a command line chooses
    lists its Params' defaults, as a yaml would; an unknown key names the valid ones."""
    from posbench.cli.app import compose_jobs, preflight
    from posbench.cli.config import to_spec
    from posbench.core.errors import PosbenchError

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(SOURCE.parent))
    enc = f"encoding={SOURCE.stem}:LogDistanceBias"
    (cfg,) = compose_jobs("config", [enc, "encoding.slope=0.5", "model=tiny"], False)
    spec = to_spec(cfg)
    assert spec.encoding.params.slope == 0.5
    (default,) = compose_jobs("config", [enc, "model=tiny"], False)
    # the defaults were written into config.yaml before too: the run's identity is unchanged
    assert to_spec(default).resolved()["encoding"] == {"name": f"{SOURCE.stem}:LogDistanceBias", "slope": 1.0}
    with pytest.raises(PosbenchError) as e:
        preflight([enc, "encoding.slop=0.5", "model=tiny"], "config", to_spec, lambda jobs: None)
    assert str(e.value) == f"encoding '{SOURCE.stem}:LogDistanceBias' has no parameter 'slop'; valid: slope"
