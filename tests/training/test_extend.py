"""Extension runs (posbench/training/extend.py): a finished run continued at a longer window, by
fine-tuning at the target or (PoSE, DroPE) at the training length."""

import pytest
import torch

from posbench.attention.options import AttentionOptions
from posbench.attention.positions import pose_positions
from posbench.encodings.rope import rope_frequencies
from posbench.jobs.train import run
from posbench.store.rundir import RunDir
from tests.helpers import ext

BASE = ["model=tiny", "train=smoke", "train_len=16", "eval.protocols=[nonoverlapping]", "eval.multiples=[1,4]",
        "eval.scored_tokens=256", "data=local"]


def test_pose_and_drope_fine_tune_at_the_training_length(compose, tmp_path, text_corpus):
    from posbench.training import extend

    args = ["encoding=rope", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    pose = compose(*args, "extend.length=64", "extend.method=pose", "extend.steps=4", "extend.lr=1e-3")
    assert extend.finetune_window(pose.extend, 16) == 16 and extend.finetune_settings(pose.extend, pose.train, 16).batch_size == 8
    assert torch.equal(extend.training_positions(pose.extend, 16, pose.seed)(2), pose_positions(16, 64, 0, 2))
    child = RunDir(run(pose)).read_metrics()
    assert child["train_steps"] == 4 and child["train_tokens"] == 4 * 8 * 16  # windows of 16, as the parent's
    assert {r["variant"] for r in child["evaluations"]} == {"rope+pose@4x+ft4"}
    drope = compose(*args, "extend.length=64", "extend.method=drope", "extend.steps=2", "extend.lr=1e-3")
    assert extend.training_positions(drope.extend, 16, 0) is None and extend.finetune_window(drope.extend, 16) == 16
    assert {r["variant"] for r in RunDir(run(drope)).read_metrics()["evaluations"]} == {"rope+drope@4x+ft2"}
    yarn = compose(*args, "extend.length=64", "extend.method=yarn", "extend.steps=2")
    assert extend.finetune_window(yarn.extend, 16) == 64 and extend.training_positions(yarn.extend, 16, 0) is None


def test_a_zero_step_extension_is_its_parent_under_another_name(compose, tmp_path, text_corpus):
    args = ["encoding=alibi", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    child_dir = run(compose(*args, *ext("extend.steps=0")))  # trains the missing parent first
    parent_dir = compose(*args).run_dir
    parent, child = RunDir(parent_dir).read_metrics(), RunDir(child_dir).read_metrics()
    assert parent["status"] == child["status"] == "completed"
    assert child["parent"] == compose(*args).run_id and child["extend"]["length"] == 64
    assert child_dir != parent_dir and child_dir.name.startswith("alibi_tiny_L16_s0_x64-ft0_")
    # the same weights, the same tokens: the same numbers, as the row alibi@4x+ft0
    assert [(r["length"], r["ppl"]) for r in child["evaluations"]] == [(r["length"], r["ppl"]) for r in parent["evaluations"]]
    assert {r["variant"] for r in child["evaluations"]} == {"alibi@4x+ft0"}
    assert torch.equal(RunDir(child_dir).load_checkpoint()["model"]["tok_emb.weight"], RunDir(parent_dir).load_checkpoint()["model"]["tok_emb.weight"])


def test_a_fine_tune_trains_at_the_target_length_from_the_parent(compose, tmp_path, text_corpus):
    args = ["encoding=rope", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    child_dir = run(compose(*args, *ext("extend.method=yarn", "extend.steps=6", "extend.lr=1e-3")))
    child = RunDir(child_dir).read_metrics()
    assert child["train_steps"] == 6
    # as many tokens per step as the parent (train=smoke: 8 windows of 16 = 2 windows of 64)
    assert child["train_tokens"] == 6 * 8 * 16
    assert {r["variant"] for r in child["evaluations"]} == {"rope+yarn@4x+ft6"}
    history = RunDir(child_dir).read_history()
    assert history["step"].max() == 6 and history["lr"].iloc[-1] == pytest.approx(1e-3)  # constant after warm-up
    # the child's weights moved away from the parent's
    p = compose(*args).folder.load_checkpoint()["model"]
    c = RunDir(child_dir).load_checkpoint()["model"]
    assert not torch.equal(p["tok_emb.weight"], c["tok_emb.weight"])
    # a re-run skips it, and the parent is not trained again
    stamp = (child_dir / "metrics.json").stat().st_mtime_ns
    run(compose(*args, *ext("extend.method=yarn", "extend.steps=6", "extend.lr=1e-3")))
    assert (child_dir / "metrics.json").stat().st_mtime_ns == stamp


def test_rope_trains_and_evaluates_with_the_methods_frequencies(compose, tmp_path, text_corpus):
    from posbench.jobs.evaluate import model_from_checkpoint

    args = ["encoding=rope", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}"]
    child_dir = run(compose(*args, *ext("extend.method=linear", "extend.steps=0")))
    model, _ = model_from_checkpoint(RunDir(child_dir).load_checkpoint(), torch.device("cpu"))
    expected, _ = rope_frequencies(model.encoding.shape.head_dim, 10000.0, "linear", 4.0, 16, 64)
    assert torch.allclose(model.encoding.frequencies(AttentionOptions(), 64)[0], expected)  # the trained forward's
    parent = compose(*args).folder.read_metrics()
    child = RunDir(child_dir).read_metrics()
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
    assert finetune_settings(spec.extend, spec.train, spec.train_len).warmup_steps == 4
    spec = compose("encoding=rope", *BASE, *ext("extend.steps=40", "extend.warmup_steps=0"), f"data.path={text_corpus}",
                   f"runs_dir={tmp_path}")
    assert finetune_settings(spec.extend, spec.train, spec.train_len).warmup_steps == 0
