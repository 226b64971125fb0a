"""The synthetic tasks' sections (posbench/report/tasks/section.py): the tasks section explains runs that did
not learn by their initialisation where it does; the algorithmic section and the claimed vs effective length
table, end to end: a tiny run of parity_check and one of variable_tracking through train, evaluation and the report."""

import pandas as pd

BASE = ["model=tiny", "train=smoke", "train_len=48", "eval.multiples=[1,2,4]", "data=local", "threads=1",
        "encoding=rope", "task.eval_examples=8"]


def test_new_tasks_run_through_train_evaluation_and_the_report(compose, tmp_path, text_corpus):
    from posbench.jobs.train import run
    from posbench.report.pipeline import build_report
    from posbench.store.rundir import RunDir

    common = [*BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path / 'runs'}"]
    for task in ("parity_check", "variable_tracking"):
        m = RunDir(run(compose(f"task={task}", *common))).read_metrics()
        assert m["status"] == "completed" and {r["length"] for r in m["task_evaluations"]} == {48, 96, 192}
    md = build_report(tmp_path / "runs", tmp_path / "rep").read_text()
    assert "## Algorithmic length generalisation by level" in md and "**Claimed vs effective length**" in md
    alg = pd.read_csv(tmp_path / "rep" / "algorithmic.csv")
    assert alg[["level", "task"]].values.tolist() == [["regular", "parity_check"]] and 0 <= alg["beyond"].iloc[0] <= 1
    eff = pd.read_csv(tmp_path / "rep" / "effective_length.csv").set_index("task")
    assert set(eff.index) == {"parity_check", "variable_tracking"} and (eff["claimed"] == 48).all()
    assert (eff["longest evaluated"] == 192).all() and eff.loc["variable_tracking", "floor"] == 0.75  # chance 1/2
    # a smoke run learns neither task: both named as not counted, after the table
    learned = pd.read_csv(tmp_path / "rep" / "task_learned.csv").set_index("task")
    assert set(learned.index) == {"parity_check", "variable_tracking"} and not learned["counts"].any()
    assert "**Which rows learned each task.**" in md and "**Not counted**: parity_check (train_len 48), variable_tracking (train_len 48)" in md
    print(md[md.index("**Claimed vs effective length**"):][:3000])


def test_runs_that_did_not_learn_are_explained_by_their_initialisation_where_it_does():
    """FoX and stick-breaking declare what their initialisation does to attention over distance; the
    task report prints it beside their runs that never learned the task (and says nothing for others)."""
    from posbench.report.tasks.section import _not_learned_blocks

    low = pd.DataFrame([{"task": "passkey", "variant": v, "model": "small", "train_len": 64, "seed": 0, "accuracy": 0.0}
                        for v in ("fox", "stickbreaking", "rope_swa", "stickbreaking+randpos")])
    text = "\n\n".join(block.md(None) for block in _not_learned_blocks(low))
    assert "`fox`: at the authors' initialisation" in text and "`stickbreaking`: at initialisation" in text
    assert "`rope_swa`:" not in text
    assert "`stickbreaking+randpos`: at initialisation" in text  # trained on random positions: its encoding's note


def test_the_plain_row_of_a_run_trained_on_random_positions_is_named_for_what_it_is():
    from posbench.report.tasks.section import _randomized_text

    text = _randomized_text(["rope"])
    assert "`rope+randpos`" in text and "(`rope`)" in text and "not a plainly trained model" in text
