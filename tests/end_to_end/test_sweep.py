"""The whole spine through the real command lines: Hydra multirun -> train -> evaluate -> report."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from tests.conftest import ENCODINGS, cli


def train_cmd(*overrides):
    return ("posbench.cli.train", *overrides)


def test_sweep_trains_and_evaluates_every_encoding(sweep):
    runs, _, _ = sweep
    metrics = [json.loads(p.read_text()) for p in runs.glob("*/metrics.json")]
    assert sorted(m["encoding"] for m in metrics) == sorted(ENCODINGS * 2)
    for m in metrics:
        assert m["status"] == "completed"
        assert m["train_tokens"] == 20 * 8 * 16  # smoke: 20 steps of 8 x 16 tokens
        assert m["corpus"]["source"] == "local" and m["corpus"]["hash"]
        assert m["commands"] == []  # a sweep is recorded once, in its multirun.yaml
        for protocol in ("nonoverlapping", "sliding", "fixed_target"):
            scored = {e["tokens_scored"] for e in m["evaluations"] if e["protocol"] == protocol and e["ppl"] is not None}
            assert len(scored) == 1, protocol  # the same number of tokens scored at every length
        evals = {e["length"]: e for e in m["evaluations"] if e["protocol"] == "nonoverlapping"}
        assert sorted(evals) == [16, 32, 64]
        for e in m["evaluations"]:
            if m["encoding"] == "learned" and e["length"] > 16:
                assert e["ppl"] is None and "16 positions" in e["reason"]
            else:
                assert math.isfinite(e["ppl"]) and e["ppl"] < 256  # learned something: better than uniform bytes
                assert e["bpb"] == pytest.approx(e["loss"] / math.log(2))
                assert e["ppl"] == pytest.approx(math.exp(e["loss"]))
        with np.load(runs / m["run_id"] / "per_position.npz") as z:
            pos = z[f"{m['encoding']}/nonoverlapping/L16"]
            assert pos.shape == (16,)
            assert pos.mean() == pytest.approx(evals[16]["loss"], rel=1e-5)


def test_rerun_skips_complete_runs(sweep):
    runs, overrides, _ = sweep
    before = {p: p.stat().st_mtime_ns for p in runs.glob("*/metrics.json")}
    proc = cli(*train_cmd(*overrides))
    assert proc.stderr.count("already complete") + proc.stdout.count("already complete") == 2 * len(ENCODINGS)
    assert before == {p: p.stat().st_mtime_ns for p in runs.glob("*/metrics.json")}


def test_report_tables_and_plots_match_the_metrics(sweep, sweep_report):
    runs, _, _ = sweep
    out = sweep_report
    for name in ["report.md", "report.html", "table.md", "table.csv", "table.tex", "runs.csv", "pairs.csv",
                 "evaluations.csv.gz", "ppl_vs_length.png", "per_position.png", "ratio_heatmap.png", "training_curves.png"]:
        assert (out / name).stat().st_size > 0, name
    table = pd.read_csv(out / "table.csv")
    assert sorted(table["protocol"].unique()) == ["fixed_target", "nonoverlapping", "sliding"]
    for protocol, t in table.groupby("protocol"):
        assert sorted(t["variant"]) == sorted(ENCODINGS) and set(t["seeds"]) == {2}
        metrics = [json.loads(p.read_text()) for p in runs.glob("*/metrics.json")]
        for enc in ENCODINGS:
            row = t[t["variant"] == enc].iloc[0]
            per_seed = [{e["length"]: e["ppl"] for e in m["evaluations"] if e["protocol"] == protocol}
                        for m in metrics if m["encoding"] == enc]
            # the geometric mean over the 2 seeds
            assert row["1x"] == pytest.approx(np.exp(np.mean([np.log(s[16]) for s in per_seed])))
            # the 95% interval over text and seeds (t over seeds with the scored documents' variance)
            assert row["interval"] == "text and seeds" and row["1x_lo"] < row["1x"] < row["1x_hi"]
            if enc == "learned":
                assert pd.isna(row["4x"]) and pd.isna(row["4x/1x"])
            else:
                assert row["4x/1x"] == pytest.approx(np.exp(np.mean([np.log(s[64] / s[16]) for s in per_seed])))
        assert t["1x_best"].sum() == 1 and t["1x_p_vs_best"].notna().sum() == len(ENCODINGS) - 1
        assert (t["1x_p_holm"].dropna() >= t["1x_p_vs_best"].dropna()).all()  # Holm never lowers a p-value
    md = (out / "report.md").read_text()
    assert "![perplexity against evaluation length (bands: 95% interval over text and seeds)](ppl_vs_length.png)" in md
    assert "| learned" in md and "n/d" in md and " [" in md and "**" in md
    assert "## Summary" in md and "train_len 16, model tiny, sliding windows" in md
    assert "Scored text: " in md and "validation documents" in md
    assert "posbench-train -m " in md and "seed=0,1" in md  # the sweep's command, from its multirun.yaml
    assert "\\begin{tabular}" in (out / "table.tex").read_text()


def test_report_html_shows_the_figures_beside_it_and_fetches_nothing_else(sweep_report):
    import re

    html = (sweep_report / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    linked = re.findall(r'<img alt="[^"]*" src="([^"]+)"', html)
    # every figure linked once (during_training.png: the sweep has probes), none embedded a second time
    assert sorted(linked) == sorted(p.name for p in sweep_report.glob("*.png")) and len(linked) == 5
    assert "base64," not in html
    assert not re.search(r'src="(?!\w+\.png")', html)  # nothing else fetched from disk or network
    assert not re.search(r'href="(?!#)', html)  # only anchors
    assert '<h2 id="summary">Summary</h2>' in html and "<table" in html and "Settings that differ between runs" in html


def test_standalone_evaluation_adds_lengths(sweep, tmp_path):
    import shutil

    runs, _, _ = sweep
    run_dir = tmp_path / "run"
    shutil.copytree(next(runs.glob("alibi_*s1_*")), run_dir)  # the shared sweep stays as trained
    old = {e["length"]: e["ppl"] for e in json.loads((run_dir / "metrics.json").read_text())["evaluations"]
           if e["protocol"] == "nonoverlapping"}
    cli("posbench.cli.evaluate", f"run_dir={run_dir}", "eval.multiples=[1,8]", "eval.scored_tokens=256",
        "eval.protocols=[nonoverlapping]")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    new = {e["length"]: e for e in metrics["evaluations"] if e["protocol"] == "nonoverlapping"}
    assert sorted(new) == [16, 32, 64, 128]
    assert metrics["commands"] == ["posbench-eval run_dir=<run_dir> eval.multiples=[1,8] eval.scored_tokens=256 eval.protocols=[nonoverlapping]"]
    assert new[32]["ppl"] == old[32]  # untouched lengths are kept
    assert math.isfinite(new[128]["ppl"])
    with np.load(run_dir / "per_position.npz") as z:
        assert z["alibi/nonoverlapping/L128"].shape == (128,)


def test_wandb_logger_runs_offline_without_login(tmp_path, text_corpus, cache_dir, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    cli(*train_cmd("logger=wandb", "model=tiny", "train=smoke", "train_len=16", "eval.multiples=[1,2]",
                   "data=local", f"data.path={text_corpus}", f"runs_dir={tmp_path}"))
    (run_dir,) = [p.parent for p in tmp_path.glob("*/metrics.json")]
    assert json.loads((run_dir / "metrics.json").read_text())["status"] == "completed"
    assert list((run_dir / "wandb").glob("offline-run-*")), "wandb wrote no offline run"
    cli("posbench.cli.report", str(tmp_path), "--out", str(tmp_path / "rep"), "--wandb")
    (report_run,) = (tmp_path / "rep" / "wandb").glob("offline-run-*")
    logged = list(report_run.rglob("*.png"))
    assert len(logged) == 4, logged  # the report's figures went into the offline run


PRESETS = sorted(p.stem for p in (__import__("pathlib").Path(__file__).parents[2] / "conf" / "experiment").glob("*.yaml"))


# what a preset needs to run in a few seconds on the test corpus: passkey needs windows of 21 tokens
# or more; the extension preset's LongRoPE rows need factors searched for the model (the committed
# table holds train_len 64 only: tests/attention/test_longrope.py tests LongRoPE on a table of its own); for time,
# its 20 kinds are cut to one of each sort (a RoPE scaling, llama3, PoSE, DroPE, plain continuation, the
# control, a from-scratch run), its fine-tunes to 0 and 2 steps, one seed, and its scored segment to what
# the test corpus's documents hold
TRAIN_LEN = {"modern": 32, "tasks": 32, "far_context_tasks": 48, "learned_tasks": 64}  # variable_tracking: 45 tokens
EXTRA = {"extension": ["+extension=rope_linear,rope_llama3,rope_pose,rope_drope,continued_rope,scratch_rope,alibi",
                       "extend.steps=0,2", "seed=0", "eval.first_scored=512", "eval.segment=512"],
         # one recurrent, one hybrid and one attention row, one seed, budgets of a few steps
         "hybrids": ["+hybrid=gdn,samba,rope", "seed=0", "train.budgets=[6,12]", "train.warmup_steps=1"],
         # two tasks (one with a curriculum) on an attention and a recurrent row, one seed
         "learned_tasks": ["+learned=mqar,flip_flop", "+hybrid=rope,gdn", "seed=0"],
         # a new attention row of each kind and the two new recurrences
         "frontier2": ["+hybrid=tape,cable,deltaproduct_nh2,mamba3", "seed=0", "train.budgets=[6,12]", "train.warmup_steps=1"]}


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_every_experiment_preset_runs_a_few_steps(preset, tmp_path, text_corpus, cache_dir):
    """Each preset, as a multirun, with a tiny model for 5 steps: every run completes and evaluates."""
    L = TRAIN_LEN.get(preset, 16)
    proc = cli(*train_cmd("-m", f"experiment={preset}", "model=tiny", "train=smoke", "train.steps=5", f"train_len={L}",
                          "eval.multiples=[1,2]", "eval.scored_tokens=256", "data=local", f"data.path={text_corpus}",
                          f"runs_dir={tmp_path}", *EXTRA.get(preset, [])))
    metrics = [json.loads(p.read_text()) for p in tmp_path.glob("*/metrics.json")]
    assert metrics, proc.stderr[-2000:]
    for m in metrics:
        assert m["status"] == "completed", m.get("error")
        if m["train_len"] == L:  # (the extension preset's scratch runs train at the target)
            assert {e["length"] for e in m.get("evaluations") or m["task_evaluations"]} == {L, 2 * L}
    if preset in ("all_encodings", "rope_extension"):
        (rope,) = [m for m in metrics if m["encoding"] == "rope"]
        variants = {e["variant"] for e in rope["evaluations"]}
        static = {"rope", "rope+linear@2x", "rope+ntk@2x", "rope+dynamic_ntk", "rope+yarn@2x"}  # static: one factor, the longest multiple
        if preset == "rope_extension":  # and the other RoPE methods' rows (longrope: no searched factors at train_len 16, so n/d)
            static |= {"rope+llama3@2x", "rope+longrope@2x", "rope+abf@2x", "rope+drope", "rope+rerope",
                       "rope+selfextend", "rope+dca", "rope+streaming", "rope+swaL"}
        assert variants == static
    if preset == "all_encodings":
        from posbench.encodings import available

        assert sorted(m["encoding"] for m in metrics) == available()


def test_randomized_positions_train_and_extend_a_learned_table(tmp_path, text_corpus, cache_dir):
    """Ruoss et al. 2023: trained on random positions from [0, 64), a learned table covers 4x."""
    cli(*train_cmd("encoding=learned", "model=tiny", "train=smoke", "train_len=16", "train.random_positions=64",
                   "eval.multiples=[1,4,8]", "eval.scored_tokens=256", "data=local", f"data.path={text_corpus}",
                   f"runs_dir={tmp_path}"))
    (m,) = [json.loads(p.read_text()) for p in tmp_path.glob("*/metrics.json")]
    ppl = {e["length"]: e["ppl"] for e in m["evaluations"]}
    assert math.isfinite(ppl[16]) and math.isfinite(ppl[64]) and ppl[128] is None


def test_report_lists_failed_and_incomplete_runs_apart(sweep, tmp_path):
    import shutil

    runs, _, _ = sweep
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    for extra in copy.glob("*_s1_*"):
        shutil.rmtree(extra)
    killed = next(copy.glob("rope_*"))
    (killed / "metrics.json").unlink()  # as if killed before it finished
    diverged = next(copy.glob("nope_*"))
    m = json.loads((diverged / "metrics.json").read_text())
    (diverged / "metrics.json").write_text(json.dumps({**m, "status": "diverged", "evaluations": []}))
    cli("posbench.cli.report", str(copy), "--out", str(tmp_path / "rep"))
    md = (tmp_path / "rep" / "report.md").read_text()
    table = pd.read_csv(tmp_path / "rep" / "table.csv")
    assert sorted(table["variant"].unique()) == ["alibi", "learned", "sinusoidal"]
    section = md.split("## Runs not in the table")[1]
    assert killed.name in section and "incomplete" in section
    assert diverged.name in section and "diverged" in section
