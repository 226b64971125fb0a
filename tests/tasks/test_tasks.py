"""Synthetic tasks (posbench/tasks): their chance levels, their settings' checks, and a task run end to
end (train, evaluate, resume, report); adding tasks leaves the ids of earlier runs alone."""

import pandas as pd
import pytest

from posbench.tasks import build_task

BASE = ["model=tiny", "train=smoke", "train_len=32", "eval.multiples=[1,2]", "data=local", "threads=1"]


def test_chance_levels():
    assert build_task("mqar").chance(1) == 1.0  # one pair: its value is the only one to pick
    assert build_task("mqar").chance(8) == pytest.approx(1 / 8)
    assert build_task("passkey", {"digits": 2}).chance(0.5) == pytest.approx(0.01)
    assert build_task("copy").chance(None) == pytest.approx(1 / 26)


def test_a_task_run_trains_evaluates_resumes_and_reports(compose, tmp_path, text_corpus):
    from posbench.jobs.train import run
    from posbench.report.pipeline import build_report
    from posbench.store.identity import run_identity
    from posbench.store.rundir import RunDir

    args = ["encoding=alibi", "task=passkey", "task.eval_examples=8", "task.eval_depths=[0,1]", *BASE,
            f"data.path={text_corpus}", f"runs_dir={tmp_path / 'runs'}", "eval.attention_stats=true"]
    run_dir = run(compose(*args))
    assert "_passkey_" in run_dir.name
    m = RunDir(run_dir).read_metrics()
    assert m["status"] == "completed" and m["task"] == "passkey" and m["evaluations"] == []
    cells = {(r["length"], r["condition"]) for r in m["task_evaluations"]}
    assert cells == {(32, 0.0), (32, 1.0), (64, 0.0), (64, 1.0)}
    assert all(r["examples"] == 8 and 0 <= r["exact"] <= r["token_accuracy"] <= 1 for r in m["task_evaluations"])
    assert {(a["length"], a["layer"], a["head"]) for a in m["attention"]} == {(L, l, h) for L in (32, 64) for l in (0, 1) for h in (0, 1)}
    # the evaluation grid is not part of the run: more examples evaluate again, they do not train again
    assert run_identity(compose(*args).resolved()) == run_identity(compose(*args, "task.eval_examples=16").resolved())
    stamp = (run_dir / "checkpoint.pt").stat().st_mtime_ns
    run(compose(*args, "eval.multiples=[1,2,4]"))
    m = RunDir(run_dir).read_metrics()
    assert (run_dir / "checkpoint.pt").stat().st_mtime_ns == stamp
    assert {r["length"] for r in m["task_evaluations"]} == {32, 64, 128} and {a["length"] for a in m["attention"]} == {32, 64, 128}
    # a language model of the same encoding beside it: the report has both
    run(compose(*[a for a in args if not a.startswith("task")], "eval.protocols=[nonoverlapping]", "eval.scored_tokens=512"))
    report = build_report(tmp_path / "runs", tmp_path / "rep")
    md = report.read_text()
    assert "## Do the models use far context? Synthetic tasks" in md and "## Attention: how far and how spread" in md
    assert "## Perplexity by evaluation length" in md
    assert "**Training budget (passkey):**" in md  # whether the task runs had finished learning
    tasks = pd.read_csv(tmp_path / "rep" / "tasks.csv")
    assert list(tasks["variant"]) == ["alibi"] and list(tasks["task"]) == ["passkey"]
    assert tasks["chance"].tolist() == [pytest.approx(1e-5)]  # five guessed digits
    for name in ("task_accuracy.png", "task_passkey.png", "attention.png"):
        assert (tmp_path / "rep" / name).exists()
    # the perplexity table holds the language model only
    assert len(pd.read_csv(tmp_path / "rep" / "runs.csv")) == 1


def test_a_task_report_keeps_its_training_budget_lines_through_a_rebuild(compose, tmp_path, text_corpus):
    """A report of task runs only has no budget section, yet its "Training budget" lines read the runs'
    histories: it keeps convergence.csv (posbench/report/sections/convergence.py), so that a rebuild from the
    committed folder says the same."""
    from posbench.cli.report import main
    from posbench.jobs.train import run
    from posbench.report.pipeline import build_report

    args = ["encoding=alibi", *BASE, "train.steps=16", "train.val_every=4", f"data.path={text_corpus}",
            f"runs_dir={tmp_path / 'runs'}"]
    run(compose(*args, "task=passkey", "task.eval_examples=4", "task.eval_depths=[0]"))
    for folder in ("tasks_only", "with_lm"):  # the second beside a language model: the file holds both kinds
        if folder == "with_lm":
            run(compose(*args, "eval.protocols=[nonoverlapping]"))
        md = build_report(tmp_path / "runs", tmp_path / folder).read_text()
        line = next(p for p in md.split("\n\n") if p.startswith("**Training budget (passkey):**"))
        assert "Over the last doubling of steps" in line  # read from the history, not "the records do not tell"
        main([str(tmp_path / folder), "--rebuild"])
        assert line in (tmp_path / folder / "report.md").read_text().split("\n\n"), folder
    assert "## Perplexity by evaluation length" in md


@pytest.mark.parametrize("extra, message", [
    (["task.name=sort"], "unknown task 'sort'; valid: {valid}"),  # the registry's names
    (["task=passkey", "task.digits=0"], "task.digits of 'passkey' must be positive"),
    (["task=passkey", "+task.depth=3"], "task 'passkey' has no parameter 'depth'"),
    (["task=passkey", "task.eval_depths=[1.5]"], "task.eval_depths are fractions in [0, 1], got 1.5"),
    (["task=passkey", "train_len=16"], "task passkey needs windows of at least 21 tokens"),
    (["task=passkey", "task.loss=all"], "task.loss must be one of answer, mixed, got 'all'"),
    (["task=reverse_string", "task.curriculum=[40]"], "task.curriculum stage 40 of reverse_string: a stage is a longest input"),
    (["task=mqar", "eval.during_training=[0.5]"], "set eval.during_training=[] for a task run"),
    (["task=copy", "extend.length=64"], "set extend.length=null for a task run"),
    (["eval.attention_examples=0"], "eval.attention_examples must be a positive integer"),
])
def test_bad_task_settings_are_one_line_errors(compose, tmp_path, text_corpus, extra, message):
    from posbench.core.errors import PosbenchError
    from posbench.tasks import available

    message = message.replace("{valid}", ", ".join(available()))
    with pytest.raises(PosbenchError, match=message.replace("[", r"\[").replace("]", r"\]")):
        (compose(*BASE, *extra, f"data.path={text_corpus}", f"runs_dir={tmp_path}"))
    assert not any(tmp_path.iterdir())


def test_the_answer_loss_keeps_the_ids_of_runs_made_before_task_loss(compose, tmp_path, text_corpus):
    """Task runs trained on the answers alone before ``task.loss`` existed: their ids stand."""
    from omegaconf import open_dict

    from posbench.store.identity import run_id

    cfg = compose("task=mqar", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}", raw=True)
    assert cfg.task.loss == "answer"
    before = cfg.copy()
    with open_dict(before):
        del before.task["loss"]
    assert run_id(cfg) == run_id(before)
    cfg.task.loss = "mixed"
    assert run_id(cfg) != run_id(before)


def test_language_model_runs_keep_their_ids(compose, tmp_path, text_corpus):
    from posbench.store.identity import run_identity

    assert "task" not in run_identity(compose("encoding=rope", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}").resolved())


@pytest.mark.parametrize("name", __import__("posbench.tasks", fromlist=["TASKS"]).TASKS.builtins())
def test_every_task_makes_batches_of_the_window_asked_for(name):
    """Every built-in task (one file each in posbench/tasks/, found by the registry, so a new one is tested
    here with no edit) makes inputs, targets and scored positions of the window asked for, from
    (seed, step) alone: the same batch twice."""
    import numpy as np

    from posbench.tasks import build_task

    task = build_task(name)
    text = np.frombuffer(b"def f(x):\n    return x + 1\n" * 400, dtype=np.uint8)
    L = max(64, task.min_length())
    x, y, scored = task.training_batch(text, 3, L, 0, 5)
    again = task.training_batch(text, 3, L, 0, 5)
    assert x.shape == y.shape == (3, L) and all(a.equal(b) for a, b in zip((x, y), again[:2]))
    if task.record_kind == "perplexity":
        assert scored is None  # language modelling scores every target
    else:
        assert scored.shape == (3, L) and scored.any(1).all() and task.conditions()
