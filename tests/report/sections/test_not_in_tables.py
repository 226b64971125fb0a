"""The "Runs not in the table" section (posbench/report/sections/not_in_tables.py): a trained but
unevaluated run is listed, not dropped, and one scored only on another token set is not called
unevaluated."""

import shutil

import pandas as pd

from posbench.store.rundir import RunDir


def test_a_trained_but_unevaluated_run_is_listed_not_dropped(sweep, tmp_path):
    from posbench.report.pipeline import build_report

    runs, _, _ = sweep
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy, ignore=shutil.ignore_patterns("*_s1_*"))
    rope = next(copy.glob("rope_*"))
    m = RunDir(rope).read_metrics()
    RunDir(rope).write_metrics({**m, "evaluations": []})  # as if killed while evaluating
    md = build_report(copy, tmp_path / "rep", protocols=["nonoverlapping"]).read_text()
    section = md.split("## Runs not in the table")[1]
    assert rope.name in section and "trained, not evaluated" in section


def test_a_run_scored_only_on_another_token_set_is_not_called_unevaluated(tmp_path):
    """Running the command again would only skip it: the label says where it was scored and how
    (or whether) it can be scored on the set this report compares."""
    from types import SimpleNamespace

    from posbench.report.sections.not_in_tables import NOT_EVALUATED, left_out_runs

    runs = pd.DataFrame([{"run_id": r, "status": "completed", "encoding": "rope", "train_len": 16, "seed": 0,
                          "run_dir": f"runs/{r}"} for r in ("other_corpus", "other_settings", "killed")])
    left_out = pd.DataFrame([
        {"run_id": "other_corpus", "variant": "rope", "protocol": "nonoverlapping", "token_set": "bbbb:segments[256]",
         "compared_set": "aaaa:segments[256]", "lengths": "16, 32"},
        {"run_id": "other_settings", "variant": "rope", "protocol": "nonoverlapping", "token_set": "aaaa:segments[512]",
         "compared_set": "aaaa:segments[256]", "lengths": "16, 32"}])
    ctx = SimpleNamespace(runs=runs, unevaluated=runs, left_out=left_out, runs_dir=tmp_path, runs_dirs=[tmp_path], skipped=[])
    status = dict(zip(left_out_runs(ctx)["run_id"], left_out_runs(ctx)["status"]))
    assert status == {
        "other_corpus": "evaluated on another corpus's token set (bbbb:segments[256]); trained on other text, it cannot "
                        "be scored on this one: report it with the runs of its corpus",
        "other_settings": "evaluated on another token set (aaaa:segments[512]); to score it on this one "
                          "(aaaa:segments[256]): posbench-eval run_dir=runs/other_settings with the eval.* settings of "
                          "the other runs",
        "killed": NOT_EVALUATED}
