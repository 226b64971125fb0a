"""Extension runs (posbench/training/extend.py): a finished run continued at a longer window."""

import re

import pandas as pd
import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.encodings.rope import rope_frequencies
from posbench.jobs.train import run
from posbench.store.rundir import load_checkpoint, read_history, read_metrics

BASE = ["model=tiny", "train=smoke", "train_len=16", "eval.protocols=[nonoverlapping]", "eval.multiples=[1,4]",
        "eval.scored_tokens=256", "data=local"]


def ext(*extra):
    return ["extend.length=64", *extra]


def test_a_zero_step_extension_is_its_parent_under_another_name(compose, tmp_path, text_corpus):
    args = ["encoding=alibi", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    child_dir = run(compose(*args, *ext("extend.steps=0")))  # trains the missing parent first
    parent_dir = compose(*args).run_dir
    parent, child = read_metrics(parent_dir), read_metrics(child_dir)
    assert parent["status"] == child["status"] == "completed"
    assert child["parent"] == compose(*args).run_id and child["extend"]["length"] == 64
    assert child_dir != parent_dir and child_dir.name.startswith("alibi_tiny_L16_s0_x64-ft0_")
    # the same weights, the same tokens: the same numbers, as the row alibi@4x+ft0
    assert [(r["length"], r["ppl"]) for r in child["evaluations"]] == [(r["length"], r["ppl"]) for r in parent["evaluations"]]
    assert {r["variant"] for r in child["evaluations"]} == {"alibi@4x+ft0"}
    assert torch.equal(load_checkpoint(child_dir)["model"]["tok_emb.weight"], load_checkpoint(parent_dir)["model"]["tok_emb.weight"])


def test_a_fine_tune_trains_at_the_target_length_from_the_parent(compose, tmp_path, text_corpus):
    args = ["encoding=rope", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    child_dir = run(compose(*args, *ext("extend.method=yarn", "extend.steps=6", "extend.lr=1e-3")))
    child = read_metrics(child_dir)
    assert child["train_steps"] == 6
    # as many tokens per step as the parent (train=smoke: 8 windows of 16 = 2 windows of 64)
    assert child["train_tokens"] == 6 * 8 * 16
    assert {r["variant"] for r in child["evaluations"]} == {"rope+yarn@4x+ft6"}
    history = read_history(child_dir)
    assert history["step"].max() == 6 and history["lr"].iloc[-1] == pytest.approx(1e-3)  # constant after warm-up
    # the child's weights moved away from the parent's
    p = load_checkpoint(compose(*args).run_dir)["model"]
    c = load_checkpoint(child_dir)["model"]
    assert not torch.equal(p["tok_emb.weight"], c["tok_emb.weight"])
    # a re-run skips it, and the parent is not trained again
    stamp = (child_dir / "metrics.json").stat().st_mtime_ns
    run(compose(*args, *ext("extend.method=yarn", "extend.steps=6", "extend.lr=1e-3")))
    assert (child_dir / "metrics.json").stat().st_mtime_ns == stamp


def test_rope_trains_and_evaluates_with_the_methods_frequencies(compose, tmp_path, text_corpus):
    from posbench.jobs.evaluate import model_from_checkpoint

    args = ["encoding=rope", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    child_dir = run(compose(*args, *ext("extend.method=linear", "extend.steps=0")))
    model, _ = model_from_checkpoint(load_checkpoint(child_dir), torch.device("cpu"))
    expected, _ = rope_frequencies(model.encoding.shape.head_dim, 10000.0, "linear", 4.0, 16, 64)
    assert torch.allclose(model.encoding.frequencies(AttentionOptions(), 64)[0], expected)  # the trained forward's
    parent = read_metrics(compose(*args).run_dir)
    child = read_metrics(child_dir)
    # linear interpolation changes the numbers at every length (positions / 4 everywhere)
    assert all(c["ppl"] != p["ppl"] for c, p in zip(child["evaluations"], parent["evaluations"]))


@pytest.mark.parametrize("extra, message", [
    (["encoding=alibi", "extend.length=64", "extend.method=yarn"], "extend.method=yarn is a RoPE method"),
    (["encoding=rope", "extend.length=40"], "extend.length=40 must be a multiple of train_len=16"),
    (["encoding=rope", "extend.length=64", "extend.method=pi"], "unknown extend.method 'pi'"),
    (["encoding=learned", "extend.length=64"], "learned cannot be extended to 64 tokens"),
    (["encoding=rope", "extend.length=64", "extend.steps=-1"], "extend.steps and extend.warmup_steps must be >= 0"),
    (["encoding=rope", "extend.length=64", "eval.rope_scaling=[yarn]"], "set eval.rope_scaling=[]"),
    (["encoding=rope", "extend.length=16", "extend.method=yarn"],
     "extend.length=train_len=16 is the continued-training control: it takes extend.method=none, not 'yarn'"),
    (["encoding=rope", "extend.length=8"], "extend.length=8 must be a multiple of train_len=16"),
])
def test_bad_extension_settings_are_one_line_errors(compose, tmp_path, text_corpus, extra, message):
    from posbench.core.errors import PosbenchError

    with pytest.raises(PosbenchError, match=message.replace("[", r"\[").replace("]", r"\]")):
        (compose(*BASE, *extra, f"data.path={text_corpus}", f"runs_dir={tmp_path}"))
    assert not any(tmp_path.iterdir())


def test_ordinary_runs_keep_their_ids(compose, tmp_path, text_corpus):
    """Adding ``extend`` to the schema must not move any existing run directory."""
    from posbench.store.identity import run_identity

    cfg = compose("encoding=rope", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    assert "extend" not in run_identity(cfg.resolved())


def test_the_restart_warms_up_for_a_tenth_of_the_steps_by_default(compose, tmp_path, text_corpus):
    from posbench.training.extend import finetune_settings

    spec = compose("encoding=rope", *BASE, *ext("extend.steps=40"), f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    assert finetune_settings(spec).warmup_steps == 4
    spec = compose("encoding=rope", *BASE, *ext("extend.steps=40", "extend.warmup_steps=0"), f"data.path={text_corpus}",
                   f"runs_dir={tmp_path}")
    assert finetune_settings(spec).warmup_steps == 0


def test_the_report_compares_fine_tunes_with_a_model_trained_at_the_target_and_the_control(compose, tmp_path, text_corpus):
    """The extension table has the control's row (the parent continued at train_len for the same
    steps, scored at the target) and each method's gain net of it, paired by seed."""
    from posbench.report.pipeline import build_report

    runs = tmp_path / "runs"
    # one token set for train_len 16 and 64: the same first scored target and segment length
    shared = [*BASE, "eval.first_scored=256", "eval.segment=256", f"data.path={text_corpus}", f"runs_dir={runs}"]
    for steps in (0, 4):
        run(compose("encoding=alibi", *shared, *ext(f"extend.steps={steps}")))
        run(compose("encoding=alibi", *shared, "extend.length=16", f"extend.steps={steps}"))  # the control
    scratch = read_metrics(run(compose("encoding=alibi", *shared, "train_len=64", "train.batch_size=2")))
    build_report(runs, tmp_path / "rep")
    table = pd.read_csv(tmp_path / "rep" / "table.csv")
    assert set(table["variant"]) == {"alibi", "alibi@4x+ft0", "alibi@4x+ft4", "alibi@1x+ft0", "alibi@1x+ft4"}
    ext_table = pd.read_csv(tmp_path / "rep" / "extension.csv")
    assert len(ext_table) == 2
    control = ext_table[ext_table["method"] == "continued at train_len"].iloc[0]
    at_target = lambda v: table.loc[(table["variant"] == v) & (table["train_len"] == 16), "4x"].item()  # noqa: E731
    assert control["target"] == 64 and control["ft 4"] == pytest.approx(at_target("alibi@1x+ft4"))
    row = ext_table[ext_table["method"] == "plain"].iloc[0]
    net = 100 * (1 - at_target("alibi@4x+ft4") / at_target("alibi@1x+ft4"))  # one seed: an interval over text only
    lo, hi = (float(x) for x in re.fullmatch(re.escape(f"{net:+.1f}%") + r" \[([-+.\d]+), ([-+.\d]+)\]", row["net of control ft 4"]).groups())
    assert lo <= net + 0.05 and net - 0.05 <= hi
    assert row["ft 4_lo"] <= row["ft 4"] * (1 + 1e-6) and row["ft 4"] <= row["ft 4_hi"] * (1 + 1e-6)  # (one document here: a point)
    at_target = lambda v: table.loc[(table["variant"] == v) & (table["train_len"] == 16), "4x"].item()  # noqa: E731
    assert row["method"] == "plain" and row["target"] == 64
    assert row["ft 0"] == pytest.approx(at_target("alibi@4x+ft0"))
    assert row["ft 4"] == pytest.approx(at_target("alibi@4x+ft4"))
    scratch_1x = next(r["ppl"] for r in scratch["evaluations"] if r["length"] == 64)
    assert row["from scratch"] == pytest.approx(scratch_1x)  # its 1x, on the same tokens
    needed = [s for s in (0, 4) if row[f"ft {s}"] <= 1.05 * scratch_1x]
    assert str(row["steps to within 5%"]) == (str(needed[0]) if needed else "> 4")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Context extension by fine-tuning" in md and (tmp_path / "rep" / "extension.png").exists()


def test_the_preset_pairs_each_fine_tune_with_a_model_trained_at_the_target(cache_dir):
    from collections import Counter

    from posbench.cli.app import compose_jobs

    jobs = compose_jobs("config", ["experiment=extension"], multirun=True)
    kinds = Counter((c.encoding.name, c.train_len, c.extend.length, c.extend.method) for c in jobs)
    assert {k for k in kinds if k[2] == 256} == {("rope", 64, 256, "linear"), ("rope", 64, 256, "ntk"),
                                                 ("rope", 64, 256, "yarn"), ("rope", 64, 256, "llama3"),
                                                 ("rope", 64, 256, "longrope"), ("rope", 64, 256, "abf"),
                                                 ("rope", 64, 256, "pose"), ("rope", 64, 256, "drope"),
                                                 ("rope", 64, 256, "none"),
                                                 ("alibi", 64, 256, "none"),
                                                 ("nope", 64, 256, "none"), ("kerple_log", 64, 256, "none")}
    # the control: every encoding continued at its own train_len for the same steps
    assert {k for k in kinds if k[2] == 64} == {(e, 64, 64, "none") for e in ("rope", "alibi", "nope", "kerple_log")}
    scratch = [c for c in jobs if c.extend.length is None]
    assert {(c.encoding.name, c.train_len) for c in scratch} == {(e, 256) for e in ("rope", "alibi", "nope", "kerple_log")}
    # the same tokens per step as the parents (32 x 64), and one token set for both train_lens
    assert {c.train.batch_size * c.train_len for c in jobs} == {32 * 64}
    assert {c.eval.first_scored for c in jobs} == {16 * 256} and {c.eval.segment for c in jobs} == {1024}
