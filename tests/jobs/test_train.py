"""Numbers the report puts side by side were computed on the same tokens; lengths that were not
evaluated are never called undefined; a re-run finishes evaluation instead of training again."""

import json
import logging
import shutil

import pandas as pd
import pytest
from conftest import cli

from posbench.jobs.train import run
from posbench.store.rundir import read_metrics, write_metrics

BASE = ["model=tiny", "train=smoke", "train_len=16", "eval.protocols=[nonoverlapping]", "eval.scored_tokens=256", "data=local"]


def test_a_report_never_compares_numbers_scored_on_different_tokens(sweep, tmp_path):
    """The issue's reproduction: one run re-evaluated on other tokens is left out and listed,
    instead of being ranked against the others."""
    runs, _, _ = sweep
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    rope = next(copy.glob("rope_*"))
    cli("posbench.cli.evaluate", f"run_dir={rope}", "eval.multiples=[1,2,4]", "eval.protocols=[nonoverlapping]",
        "eval.scored_tokens=128")  # other tokens: fewer of them
    sets = {r["token_set"] for r in read_metrics(rope)["evaluations"] if r["protocol"] == "nonoverlapping"}
    assert len(sets) == 2  # the old records are kept beside the new ones
    out = tmp_path / "rep"
    cli("posbench.cli.report", str(copy), "--out", str(out), "--protocols", "nonoverlapping")
    table = pd.read_csv(out / "table.csv")
    evals = pd.read_csv(out / "evaluations.csv")
    assert evals["token_set"].nunique() == 1  # every compared record: one token set
    ours = [r for r in read_metrics(rope)["evaluations"] if r["protocol"] == "nonoverlapping" and r["length"] == 16]
    compared = evals[(evals["variant"] == "rope") & (evals["length"] == 16)]["ppl"].tolist()
    kept = [r["ppl"] for r in ours if r["token_set"] == evals["token_set"].iloc[0]]
    assert compared == kept and len(set(r["ppl"] for r in ours)) == 2
    assert table.loc[table["variant"] == "rope", "1x"].item() == pytest.approx(kept[0])
    md = (out / "report.md").read_text()
    section = md.split("## Records not compared")[1].split("##")[0]
    assert rope.name in section and "segments[" in section and "16, 32, 64" in section


def test_not_evaluated_is_not_called_not_defined(sweep, tmp_path):
    """A length evaluated for some runs only is "n/e", and the summary claims nothing about it;
    the learned table past its size stays "n/d"."""
    runs, _, _ = sweep
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    for run_dir in copy.glob("nope_*"):  # as if nope had been evaluated at 1x and 2x only
        m = read_metrics(run_dir)
        m["evaluations"] = [r for r in m["evaluations"] if r["multiple"] <= 2]
        write_metrics(run_dir, m)
    out = tmp_path / "rep"
    cli("posbench.cli.report", str(copy), "--out", str(out), "--protocols", "nonoverlapping")
    md = (out / "report.md").read_text()
    rows = {line.split("|")[2].strip(): line for line in md.splitlines() if line.startswith("| nonoverlapping")}
    cells = [c.strip() for c in rows["nope"].split("|")]
    assert cells[8] == "n/e" and cells[9] == "n/e"  # 4x and its ratio to 1x: not evaluated
    learned = [c.strip() for c in rows["learned"].split("|")]
    assert learned[7] == "n/d" and learned[8] == "n/d"  # 2x, 4x: the table has 16 positions
    summary = md.split("## Summary")[1].split("##")[0]
    assert "Not evaluated at 4x: `nope`" in summary
    assert "Not defined at 4x: `learned`" in summary
    assert "Not defined at 4x: `nope`" not in summary and "`nope` 1." not in summary  # no verdict claimed


def test_rerunning_a_complete_run_with_new_eval_settings_evaluates_what_is_missing(compose, tmp_path, text_corpus, caplog):
    cfg = compose("encoding=alibi", *BASE, "eval.multiples=[1,2]", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    run_dir = run(cfg)
    first = read_metrics(run_dir)
    weights = (run_dir / "checkpoint.pt").read_bytes()
    cfg = compose("encoding=alibi", *BASE, "eval.multiples=[1,2,4]", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    with caplog.at_level(logging.INFO, logger="posbench"):
        run(cfg)
    assert any("1 new evaluation records" in r.getMessage() for r in caplog.records)
    after = read_metrics(run_dir)
    assert (run_dir / "checkpoint.pt").read_bytes() == weights  # not trained again
    assert [r for r in after["evaluations"] if r["length"] <= 32] == first["evaluations"]  # old records untouched
    assert [r["length"] for r in after["evaluations"]] == [16, 32, 64]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="posbench"):
        run(cfg)  # nothing missing now
    assert any("already complete" in r.getMessage() for r in caplog.records)


def test_a_kill_during_evaluation_keeps_the_training(compose, tmp_path, text_corpus, monkeypatch):
    import posbench.jobs.train as train

    cfg = compose("encoding=rope", *BASE, "eval.multiples=[1,2]", f"data.path={text_corpus}", f"runs_dir={tmp_path}")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as if the process were stopped while evaluating

    monkeypatch.setattr(train, "evaluate_into", killed)
    with pytest.raises(KeyboardInterrupt):
        run(cfg)
    run_dir = cfg.run_dir
    m = read_metrics(run_dir)
    assert m["status"] == "completed" and m["evaluations"] == [] and (run_dir / "checkpoint.pt").exists()
    weights = (run_dir / "checkpoint.pt").read_bytes()
    monkeypatch.undo()
    history = (run_dir / "history.json").read_text()
    run(cfg)  # evaluates the saved checkpoint; trains nothing
    assert (run_dir / "checkpoint.pt").read_bytes() == weights and (run_dir / "history.json").read_text() == history
    assert [r["length"] for r in read_metrics(run_dir)["evaluations"]] == [16, 32]


def test_a_diverged_run_is_final_unless_retried(compose, tmp_path, text_corpus, caplog):
    args = ["encoding=nope", *BASE, "train.lr=1e12", "train.warmup_steps=1", "train.grad_clip=1e30",
            f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    run_dir = run(compose(*args))
    assert read_metrics(run_dir)["status"] == "diverged"
    stamp = (run_dir / "metrics.json").stat().st_mtime_ns
    with caplog.at_level(logging.WARNING, logger="posbench"):
        run(compose(*args))
    assert any("diverged" in r.getMessage() and "retry_diverged=true" in r.getMessage() for r in caplog.records)
    assert (run_dir / "metrics.json").stat().st_mtime_ns == stamp
    run(compose(*args, "retry_diverged=true"))  # trained again (and, with this learning rate, diverges again)
    assert (run_dir / "metrics.json").stat().st_mtime_ns != stamp
    assert json.loads((run_dir / "metrics.json").read_text())["status"] == "diverged"


def test_a_learning_rate_grid_keeps_the_default_in_the_main_table_and_tunes_on_1x_validation_loss(compose, tmp_path, text_corpus):
    from posbench.report.pipeline import build_report

    runs = tmp_path / "runs"
    made = {}
    for enc in ("nope", "alibi"):
        for lr in (2e-3, 2e-2):
            cfg = compose(f"encoding={enc}", f"train.lr={lr}", "+encoding.lr_mult=1.0", *BASE, "eval.multiples=[1,2]",
                          f"data.path={text_corpus}", f"runs_dir={runs}")
            made[enc, lr] = read_metrics(run(cfg))
    out = tmp_path / "rep"
    build_report(runs, out)
    main = pd.read_csv(out / "table.csv")
    tuned = pd.read_csv(out / "table_tuned.csv")
    choices = pd.read_csv(out / "tuning.csv")
    one_x = lambda m: next(r["ppl"] for r in m["evaluations"] if r["length"] == 16)  # noqa: E731
    for enc in ("nope", "alibi"):
        best_lr = min((2e-3, 2e-2), key=lambda lr: made[enc, lr]["final_val_loss"])  # on 1x validation loss only
        chosen = choices[(choices["encoding"] == enc) & choices["chosen"]]
        assert chosen["lr"].item() == pytest.approx(best_lr)
        assert main.loc[main["variant"] == enc, "1x"].item() == pytest.approx(one_x(made[enc, 2e-3]))  # the default lr
        assert tuned.loc[tuned["variant"] == enc, "1x"].item() == pytest.approx(one_x(made[enc, best_lr]))
    assert "## Tuned learning rates" in (out / "report.md").read_text()


def test_a_choice_at_the_edge_of_the_grid_is_named():
    from posbench.report.tuning import grid_edge_warning

    def grid(chosen_lr):
        return pd.DataFrame([{"encoding": enc, "model": "small", "train_len": 64, "lr": lr, "lr_mult": 1.0,
                              "val_loss": 1.0, "seeds": 1, "chosen": lr == chosen_lr[enc]}
                             for enc in ("nope", "alibi") for lr in (1e-3, 2e-3, 4e-3)])
    text = grid_edge_warning(grid({"nope": 4e-3, "alibi": 2e-3}))
    assert "1 of 2 chose the highest learning rate tried (`nope`)" in text and "alibi" not in text
    assert "lowest learning rate tried (`alibi`)" in grid_edge_warning(grid({"nope": 2e-3, "alibi": 1e-3}))
    assert grid_edge_warning(grid({"nope": 2e-3, "alibi": 2e-3})) is None  # inside the grid; one lr_mult: no edge


def test_a_trained_but_unevaluated_run_is_listed_not_dropped(sweep, tmp_path):
    from posbench.report.pipeline import build_report

    runs, _, _ = sweep
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    rope = next(copy.glob("rope_*"))
    m = read_metrics(rope)
    write_metrics(rope, {**m, "evaluations": []})  # as if killed while evaluating
    md = build_report(copy, tmp_path / "rep", protocols=["nonoverlapping"]).read_text()
    section = md.split("## Runs not in the table")[1]
    assert rope.name in section and "trained, not evaluated" in section


def test_a_new_evaluation_variant_on_a_complete_run_is_evaluated_not_retrained(compose, tmp_path, text_corpus):
    cfg = compose("encoding=rope", *BASE, "eval.multiples=[1,2]", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    run_dir = run(cfg)
    weights = (run_dir / "checkpoint.pt").read_bytes()
    run(compose("encoding=rope", *BASE, "eval.multiples=[1,2]", "eval.rope_scaling=[yarn]", f"data.path={text_corpus}",
                f"runs_dir={tmp_path}"))
    assert (run_dir / "checkpoint.pt").read_bytes() == weights
    assert {r["variant"] for r in read_metrics(run_dir)["evaluations"]} == {"rope", "rope+yarn@2x"}
