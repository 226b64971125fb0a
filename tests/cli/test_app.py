"""What each command prints where (posbench/cli/app.py, train.py, evaluate.py): one result line per
run on stdout, an aligned table of new records, progress as log lines in a pipe, and refusals that
leave nothing behind."""

import re

import pytest

from tests.conftest import cli, tree

SMALL = ["model=tiny", "train_len=16", "train.batch_size=4", "train.warmup_steps=2", "train.log_every=5",
         "train.val_every=20", "train.val_batches=1", "eval.multiples=[1,2]", "eval.scored_tokens=128", "data=local"]


def test_a_sweep_on_a_pipe_keeps_stdout_for_results_and_says_each_thing_once(tmp_path, cache_dir):
    """Hydra's lines go to stderr with the rest; no progress bars in a pipe; the non-UTF-8 share
    is told once per command (not once per load of the corpus); each run names its directory."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"text{i}.txt").write_text("plain text, and more of it. " * 120)
    (docs / "blob.txt").write_bytes(bytes(range(128, 256)) * 20)
    proc = cli("posbench.cli.train", "-m", "seed=0,1", *SMALL, "train.steps=2", f"data.path={docs}", f"runs_dir={tmp_path / 'runs'}")
    # stdout: one result line per run (run id, status, scores, directory), nothing else
    assert sorted(line.split()[0] for line in proc.stdout.splitlines()) == sorted(
        p.name for p in (tmp_path / "runs").iterdir() if not p.name.startswith("."))
    assert "[HYDRA] Launching 2 jobs locally" in proc.stderr
    assert proc.stderr.count("are not UTF-8 text") == 1
    assert "step/s" not in proc.stderr and "tok/s" not in proc.stderr and "\r" not in proc.stderr
    dirs = [line.split("run directory: ")[1] for line in proc.stderr.splitlines() if "run directory: " in line]
    assert sorted(dirs) == sorted(str(p) for p in (tmp_path / "runs").iterdir() if not p.name.startswith("."))


# -- what each command prints where ----------------------------------------------------------------


TINY = ["model=tiny", "train=smoke", "train.steps=4", "train_len=16", "eval.multiples=[1,2]", "eval.scored_tokens=256",
        "data=local"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, text_corpus, cache_dir):
    """One tiny run trained through a real interpreter: (its directory, the command's output)."""
    runs = tmp_path_factory.mktemp("cli-runs")
    proc = cli("posbench.cli.train", *TINY, f"data.path={text_corpus}", f"runs_dir={runs}", cwd=runs)
    (run_dir,) = [p for p in runs.iterdir() if p.is_dir()]
    return run_dir, proc


@pytest.fixture
def run_copy(tiny_run, tmp_path):
    import shutil

    shutil.copytree(tiny_run[0], tmp_path / "run")
    return tmp_path / "run"


def test_train_prints_one_result_line_per_run_on_stdout(tiny_run):
    run_dir, proc = tiny_run
    (line,) = proc.stdout.strip().splitlines()
    assert re.fullmatch(rf"{run_dir.name}  completed  ppl 1x=\d+\.\d\d 2x=\d+\.\d\d \(nonoverlapping\)  "
                        rf"{re.escape(str(run_dir))}", line), line


def test_eval_again_scores_only_what_is_new_and_prints_one_aligned_table(run_copy, tmp_path):
    first = cli("posbench.cli.evaluate", f"run_dir={run_copy}", "eval.multiples=[1,2]", "eval.scored_tokens=256", cwd=tmp_path)
    assert f"{run_copy.name}: already have 4 records; nothing new to score" in first.stderr
    assert "ppl:" not in first.stderr  # the scores are on stdout only, not logged again
    lines = first.stdout.strip().splitlines()
    assert lines[0].split() == ["variant", "protocol", "length", "multiple", "ppl", "tokens"] and len(lines) == 5
    assert len({len(line) for line in lines[1:]}) == 1  # aligned: every row as wide
    assert len({line.index(" 1x") if " 1x" in line else line.index(" 2x") for line in lines[1:]}) == 1
    more = cli("posbench.cli.evaluate", f"run_dir={run_copy}", "eval.multiples=[1,2,4]", "eval.scored_tokens=256", cwd=tmp_path)
    assert f"{run_copy.name}: already have 4 records; scoring 2 new" in more.stderr
    assert len(more.stdout.strip().splitlines()) == 7


def test_a_command_in_a_pipe_logs_training_and_each_evaluation_length(tiny_run):
    _, proc = tiny_run
    assert "train rope L=16: step 4/4 (100%), loss " in proc.stderr, proc.stderr
    assert "eval rope L=16: starting" in proc.stderr and "eval rope L=32: starting" in proc.stderr
    assert "\r" not in proc.stderr  # no bar redrawn into a log file


# -- refusals that leave nothing behind ------------------------------------------------------------


@pytest.fixture
def in_runs(tiny_run, tmp_path):
    """A copy of the tiny run under its own name in a runs folder (so posbench-train finds it)."""
    import shutil

    run_dir = tmp_path / "runs" / tiny_run[0].name
    shutil.copytree(tiny_run[0], run_dir)
    return run_dir


def test_a_newer_metrics_schema_is_refused_by_every_command(entry, in_runs, text_corpus, tmp_path, monkeypatch, capsys):
    import json

    from posbench.cli.report import main as report

    monkeypatch.chdir(tmp_path)
    metrics = in_runs / "metrics.json"
    metrics.write_text(json.dumps({**json.loads(metrics.read_text()), "schema_version": 2}))
    before = {p.name: p.read_bytes() for p in in_runs.iterdir()}
    expected = (f"posbench: error: {metrics} has schema_version 2, newer than posbench 0.1.0 reads (schema_version 1); "
                "upgrade posbench to work on this run")
    for program, argv in [("eval", [f"run_dir={in_runs}"]),
                          ("train", [*TINY, f"data.path={text_corpus}", f"runs_dir={in_runs.parent}"])]:
        code, err = entry(program, *argv)
        assert code == 2 and err.strip() == expected, (program, err)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        report([str(in_runs.parent), "--out", str(tmp_path / "report")])
    assert exc.value.code == 2 and capsys.readouterr().err.strip() == expected
    assert {p.name: p.read_bytes() for p in in_runs.iterdir()} == before


def test_eval_refusing_an_unfinished_run_leaves_no_lock(entry, tiny_run, tmp_path, monkeypatch):
    import shutil

    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(tiny_run[0] / "config.yaml", run_dir)  # started, killed before metrics.json
    code, err = entry("eval", f"run_dir={run_dir}")
    assert code == 2 and err.strip() == (f"posbench: error: {run_dir} has no metrics.json: its training has not finished "
                                         "(posbench-train resumes it)")
    assert tree(tmp_path) == ["run", "run/config.yaml"]


def test_eval_says_when_the_validation_set_is_small(run_copy, tmp_path):
    proc = cli("posbench.cli.evaluate", f"run_dir={run_copy}", "eval.multiples=[1,2]", "eval.scored_tokens=null", cwd=tmp_path)
    (line,) = [x for x in proc.stderr.splitlines() if "small validation set" in x]
    assert re.search(r"small validation set: [\d,]+ tokens scored at each length \(in \d+ documents\), fewer than 10,000",
                     line), line
