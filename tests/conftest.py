"""Shared fixtures. Tests never touch the network or a wandb account, and use their own cache."""

import importlib
import logging
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ["WANDB_MODE"] = "disabled"
if os.environ.get("PYTEST_XDIST_WORKER"):
    # one torch thread per test worker, here and in the commands tests start (torch reads
    # OMP_NUM_THREADS): workers x threads above the cores made every run spin-wait, 4x its CPU time
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"

ENCODINGS = ["nope", "sinusoidal", "learned", "rope", "alibi"]


def pytest_runtest_setup(item):
    """A test marked ``cuda`` needs a CUDA GPU: without one it is skipped, with the reason."""
    if item.get_closest_marker("cuda"):
        import torch

        if not torch.cuda.is_available():
            pytest.skip("needs a CUDA GPU")


@pytest.fixture(autouse=True)
def _config_store_options_do_not_outlive_their_test():
    """Hydra's ConfigStore is one per process: the config-group options a test's command stores (a
    ``module:attr`` encoding, a plug-in) are taken out after it, or a later test's ``glob(*)`` sweep
    over every encoding finds them (seen when the tests ran in another order, on two workers)."""
    from hydra.core.config_store import ConfigStore

    repo = ConfigStore.instance().repo
    before = {group: set(repo.get(group, {})) for group in ("encoding", "task")}
    yield
    for group, names in before.items():
        for name in set(repo.get(group, {})) - names:
            del repo[group][name]


@pytest.fixture
def forget_loaded_plugins(monkeypatch):
    """Every registry forgets what the test loaded (a ``module:attr`` path, a plug-in made to fail): a
    later test that builds every available name must not find it."""
    from posbench.attention.rope_scalings import ROPE_SCALINGS
    from posbench.encodings import ENCODINGS
    from posbench.evaluation.protocols import PROTOCOLS
    from posbench.evaluation.variants import VARIANTS
    from posbench.mixers import MIXERS
    from posbench.report.section import SECTIONS
    from posbench.tasks import TASKS

    for registry in (ENCODINGS, TASKS, VARIANTS, PROTOCOLS, ROPE_SCALINGS, SECTIONS, MIXERS):
        monkeypatch.setattr(registry, "_external", dict(registry._external))


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("posbench-cache")
    os.environ["POSBENCH_CACHE"] = str(path)
    return path


def write_text_corpus(root: Path, n_docs: int = 40, words_per_doc: int = 400, seed: int = 0) -> Path:
    """A small corpus with learnable structure: documents of repeated, numbered 'sentences'."""
    rng = random.Random(seed)
    vocab = ["alpha", "beta", "gamma", "delta", "posit", "token", "window", "length", "bias", "rotate"]
    root.mkdir(parents=True, exist_ok=True)
    for d in range(n_docs):
        words = []
        for i in range(words_per_doc):
            words.append(rng.choice(vocab))
            if i % 8 == 7:
                words.append(f"{i // 8}.\n")
        (root / f"doc{d:03d}.txt").write_text(" ".join(words))
    return root


@pytest.fixture(scope="session")
def text_corpus(tmp_path_factory) -> Path:
    return write_text_corpus(tmp_path_factory.mktemp("corpus") / "docs")


@pytest.fixture
def compose(cache_dir):
    """Compose the real Hydra config with overrides, as the command line would, into a RunSpec."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from posbench.cli.config import CONF_DIR, register_configs

    register_configs()

    def _compose(*overrides: str, config_name: str = "config", raw: bool = False):
        """The typed RunSpec of the overrides (every value checked), or with ``raw`` Hydra's DictConfig."""
        from posbench.cli.config import to_spec

        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            # posbench-eval's: with Hydra's node, whose record of the overrides says which eval keys the
            # command line gave (the others are the run's own: posbench.cli.config.to_eval_request)
            cfg = hydra_compose(config_name=config_name, overrides=list(overrides),
                                return_hydra_config=config_name == "evaluate")
        return cfg if raw or config_name != "config" else to_spec(cfg)

    return _compose


def cli(*args, cwd=None, check=True, env=None, timeout=600):
    """Run ``python -m <args>`` as a user would; raises with the output unless it succeeds."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


@pytest.fixture
def entry(monkeypatch, capsys):
    """Run an entry point's ``main`` in this process (fast: no interpreter start) and return
    (exit status, stderr). For commands that stop before training: bad input."""

    def _run(program: str, *argv: str) -> tuple[int, str]:
        module = importlib.import_module({"train": "posbench.cli.train", "eval": "posbench.cli.evaluate"}[program])
        monkeypatch.setattr(sys, "argv", [f"posbench-{program}", *argv])
        capsys.readouterr()
        # a job that starts configures logging with handlers on this test's captured stderr: put the
        # root logger back, or later tests' log lines go to a closed stream ("--- Logging error ---")
        root = logging.getLogger()
        handlers, level = root.handlers[:], root.level
        try:
            with pytest.raises(SystemExit) as exc:
                module.main()
        finally:
            root.handlers[:], root.level = handlers, level
        return exc.value.code, capsys.readouterr().err

    return _run


def tree(path: Path) -> list[str]:
    """Every file and folder below path (empty if it does not exist): to prove nothing was written."""
    path = Path(path)
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


SWEEP_OVERRIDES = [
    "model=tiny", "train=smoke", "train_len=16", "eval.multiples=[1,2,4]",
    "eval.protocols=[nonoverlapping,sliding,fixed_target]", "eval.target_tokens=8", "eval.target_docs=16",
    "eval.scored_tokens=512", "eval.during_training=[0.5,1.0]", "data=local",
]


@pytest.fixture(scope="session")
def sweep(tmp_path_factory, text_corpus, cache_dir):
    """One real sweep through the command line, shared by every test that reads runs: 5 encodings
    x 2 seeds, tiny model, 20 steps, three protocols."""
    runs = tmp_path_factory.mktemp("runs")
    overrides = ["-m", f"encoding={','.join(ENCODINGS)}", "seed=0,1", *SWEEP_OVERRIDES,
                 f"data.path={text_corpus}", f"runs_dir={runs}"]
    proc = cli("posbench.cli.train", *overrides)
    return runs, overrides, proc


@pytest.fixture(scope="session")
def sweep_report(sweep, tmp_path_factory):
    """posbench-report on the shared sweep."""
    runs, _, _ = sweep
    out = tmp_path_factory.mktemp("report")
    cli("posbench.cli.report", str(runs), "--out", str(out))
    return out


@pytest.fixture(scope="session")
def sweep_context(sweep):
    """The report's context of the shared sweep (every run read once, the report's default options):
    for tests of one report section or of the frames the sections share."""
    from posbench.report.analysis import task_frames
    from posbench.report.analysis import convergence
    from posbench.report.context import Options, ReportContext
    from posbench.report.pipeline import DEFAULT_TOLERANCE

    runs, _, _ = sweep
    options = Options(DEFAULT_TOLERANCE, convergence.DEFAULT_IMPROVING, convergence.DEFAULT_SPREAD, task_frames.DEFAULT_THRESHOLD)
    return ReportContext.load(runs, options)


@pytest.fixture(scope="module")
def small_runs(sweep, tmp_path_factory) -> Path:
    """The shared sweep's seed-0 runs (5 encodings, three protocols, probes during training)."""
    import shutil

    runs, _, _ = sweep
    copy = tmp_path_factory.mktemp("small") / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    return copy


@pytest.fixture
def runs(small_runs, tmp_path) -> Path:
    """A copy of ``small_runs`` this test may damage."""
    import shutil

    return Path(shutil.copytree(small_runs, tmp_path / "runs"))


@pytest.fixture
def trained_run(sweep, tmp_path):
    """A copy of one completed run of the shared sweep (alibi, seed 0), to evaluate again or damage."""
    import shutil

    runs, _, _ = sweep
    run_dir = tmp_path / "run"
    shutil.copytree(next(runs.glob("alibi_*s0_*")), run_dir)
    return run_dir
