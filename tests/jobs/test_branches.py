"""Warmup-stable-decay and budget branches (posbench/jobs/branches.py): a branch is the run of its
budget, bit for bit; the trunk trains once; kill -9 anywhere changes nothing; bad budgets are
refused before anything is written."""

import json
import os
import subprocess
import sys

import pytest
import torch

from posbench.training.schedules import cooldown_start
from tests.conftest import tree
from tests.helpers import kill_at

# 0.3 of 20 and of 36 steps: cool-downs of 6 and 10 steps, branch points 14 and 26 (one not on a
# log or checkpoint step); probes at fractions of each budget fall in the trunk and in the branch
COMMON = ["model=tiny", "train_len=16", "train.batch_size=4", "train.warmup_steps=3", "train.log_every=2",
          "train.val_every=8", "train.val_batches=1", "train.checkpoint_every=5", "train.schedule=wsd",
          "train.cooldown=0.3", "train.cooldown_shape=1-sqrt", "eval.multiples=[1,2]", "eval.scored_tokens=128",
          "eval.protocols=[nonoverlapping]", "eval.during_training=[0.25,0.5,1.0]", "data=local"]


KEYS = ("evaluations", "during_training", "final_train_loss", "final_val_loss", "train_steps", "train_tokens", "status")


def weights(run_dir):
    return torch.load(run_dir / "checkpoint.pt", weights_only=True)["model"]


def metrics(run_dir):
    return json.loads((run_dir / "metrics.json").read_text())


def history(run_dir):
    return [{k: v for k, v in h.items() if k != "tokens_per_s"} for h in json.loads((run_dir / "history.json").read_text())]


def assert_same_run(a, b):
    """Two run directories hold the same run: weights, evaluations, probes, curve."""
    assert a.name == b.name
    wa, wb = weights(a), weights(b)
    # a mixer's carry (its extra state: off outside state passing) is a dict, not a tensor
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) if torch.is_tensor(wa[k]) else wa[k] == wb[k]
                                          for k in wa), a.name
    ma, mb = metrics(a), metrics(b)
    for key in KEYS:
        assert ma[key] == mb[key], (a.name, key)
    assert history(a) == history(b), a.name


@pytest.mark.parametrize("pattern", [[], ["model.mixers=[gdn,attention]"]], ids=["attention", "hybrid"])
def test_each_branch_is_the_standalone_wsd_run_of_its_budget_bit_for_bit(compose, tmp_path, text_corpus, pattern):
    from posbench.jobs.train import run
    from posbench.store.rundir import TrunkDir

    common = [*COMMON, f"data.path={text_corpus}", *pattern]
    trunk_dir = run(compose(*common, "train.budgets=[20,36]", f"runs_dir={tmp_path / 'branched'}"))
    assert trunk_dir.parent.name == "trunks" and TrunkDir(trunk_dir).snapshot_steps() == [14, 26]
    branches = []
    for steps in (20, 36):
        alone = run(compose(*common, f"train.steps={steps}", f"runs_dir={tmp_path / 'alone'}"))
        branch = tmp_path / "branched" / alone.name  # a branch has the id of the run of its budget
        assert_same_run(branch, alone)
        m = metrics(branch)
        assert m["trunk"] == trunk_dir.name and m["branch_step"] == cooldown_start(0.3, steps)
        assert m["budget"] == {"steps": steps, "tokens": steps * 4 * 16}
        assert "trunk" not in metrics(alone) and not (branch / "resume.pt").exists()
        assert [p["step"] for p in m["during_training"]][::2] == [round(f * steps) for f in (0.25, 0.5, 1.0)]
        branches.append(weights(branch))
    short, long_ = branches  # two budgets, two models: the comparison above can fail
    assert not all(torch.equal(short[k], long_[k]) for k in short)


def test_a_branch_whose_snapshot_exists_does_not_train_the_trunk_and_a_complete_one_is_skipped(
        compose, tmp_path, text_corpus, caplog):
    import logging
    import shutil

    from posbench.jobs.train import run

    spec = compose(*COMMON, f"data.path={text_corpus}", "train.budgets=[20,36]", f"runs_dir={tmp_path}")
    trunk_dir = run(spec)
    status = (trunk_dir / "trunk.json").read_text()
    branch = compose(*COMMON, f"data.path={text_corpus}", "train.steps=36", f"runs_dir={tmp_path}").run_dir
    kept = tmp_path.parent / "kept" / branch.name
    shutil.copytree(branch, kept)
    shutil.rmtree(branch)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="posbench"):
        run(spec)
    said = [r.getMessage() for r in caplog.records]
    assert (trunk_dir / "trunk.json").read_text() == status  # the trunk did not train again
    assert not any(s.startswith("trunk ") for s in said)
    assert sum("already complete" in s for s in said) == 1  # the budget of 20 steps
    assert_same_run(branch, kept)


def test_a_budget_added_later_extends_the_trunk_from_its_last_snapshot(compose, tmp_path, text_corpus):
    from posbench.jobs.train import run
    from posbench.store.rundir import TrunkDir

    common = [*COMMON, f"data.path={text_corpus}"]
    run(compose(*common, "train.budgets=[20]", f"runs_dir={tmp_path / 'grown'}"))
    trunk_dir = run(compose(*common, "train.budgets=[20,36]", f"runs_dir={tmp_path / 'grown'}"))
    assert TrunkDir(trunk_dir).snapshot_steps() == [14, 26]
    assert json.loads((trunk_dir / "trunk.json").read_text())["train_steps"] == 26
    alone = run(compose(*common, "train.steps=36", f"runs_dir={tmp_path / 'alone'}"))
    assert_same_run(tmp_path / "grown" / alone.name, alone)


# -- kill -9 during the trunk and during a branch ---------------------------------------------------


KILL = ["model=small", "train_len=32", "train.batch_size=16", "train.warmup_steps=10", "train.log_every=5",
        "train.val_every=40", "train.val_batches=2", "train.checkpoint_every=10", "train.schedule=wsd",
        "train.cooldown=0.5", "train.budgets=[40,80]", "eval.multiples=[1,2]", "eval.scored_tokens=256",
        "eval.protocols=[nonoverlapping]", "eval.during_training=[0.25,1.0]", "data=local"]


def start(runs_dir, corpus):
    cmd = [sys.executable, "-m", "posbench.cli.train", *KILL, f"data.path={corpus}", f"runs_dir={runs_dir}"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ})


def test_kill_minus_nine_in_the_trunk_and_in_a_branch_gives_identical_runs(tmp_path, text_corpus, cache_dir):
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    proc = start(clean, text_corpus)
    assert proc.wait() == 0, proc.stderr.read()

    assert kill_at(start(killed, text_corpus), "trunks/*/resume.pt", killed, 10) < 40  # in the trunk
    # in the branch of 80 steps (it starts at the trunk's step 40, its first own resume state is 50)
    assert kill_at(start(killed, text_corpus), "*/resume.pt", killed, 50) >= 50
    final = start(killed, text_corpus)
    assert final.wait() == 0, final.stderr.read()

    runs = sorted(p.name for p in clean.iterdir() if (p / "metrics.json").exists())
    assert len(runs) == 2 and runs == sorted(p.name for p in killed.iterdir() if (p / "metrics.json").exists())
    for name in runs:
        assert_same_run(clean / name, killed / name)
        assert not (killed / name / "resume.pt").exists()


def test_a_signal_in_the_trunk_saves_its_current_step_and_the_branches_are_the_runs_never_interrupted(
        compose, tmp_path, text_corpus, monkeypatch):
    """A real SIGTERM during the trunk's step 5 (sent by its first probe): the trunk stops after that
    step with a resume state at it and the line naming it; the same command resumes the trunk there and
    each branch is the run of its budget bit for bit."""
    import signal

    import posbench.jobs.branches as branches_module
    from posbench.core.errors import Interrupted
    from posbench.jobs.train import run
    from posbench.store.rundir import TrunkDir

    real, sent = branches_module.during_training_probe, []

    def signalling(*args, **kwargs):
        probe = real(*args, **kwargs)

        def once(model):
            if not sent:
                sent.append(os.kill(os.getpid(), signal.SIGTERM))
            return probe(model)
        return once

    monkeypatch.setattr(branches_module, "during_training_probe", signalling)
    common = [*COMMON, f"data.path={text_corpus}"]
    spec = compose(*common, "train.budgets=[20,36]", f"runs_dir={tmp_path / 'branched'}")
    with pytest.raises(Interrupted) as stopped:
        run(spec)
    assert stopped.value.exit_status == 143 and "after step 5 of 26 (trunk rope L=16); resume state saved; " \
        "run the same command again to resume from step 5" in stopped.value.line
    (trunk_dir,) = (tmp_path / "branched" / "trunks").iterdir()
    assert TrunkDir(trunk_dir).load_resume()["next_step"] == 5
    run(spec)
    for steps in (20, 36):
        alone = run(compose(*common, f"train.steps={steps}", f"runs_dir={tmp_path / 'alone'}"))
        assert_same_run(tmp_path / "branched" / alone.name, alone)


# -- refused before anything is written -----------------------------------------------------------


REFUSED = [
    (["train.schedule=wsd", "train.budgets=[1200,600]"], "train.budgets=[1200, 600] must be increasing, e.g. [600,1200,2400]"),
    (["train.schedule=wsd", "train.budgets=[600,600]"], "train.budgets=[600, 600] must be increasing, e.g. [600,1200,2400]"),
    (["train.budgets=[600,1200]"], "train.budgets=[600, 1200] needs train.schedule=wsd (got train.schedule=cosine): "
     "only a warmup-stable-decay run can branch"),
    (["train.schedule=wsd", "train.budgets=[100,600]", "train.warmup_steps=100"], "train.cooldown=0.2 starts the cool-down of the budget of 100 "
     "steps at step 80, before the warm-up ends (train.warmup_steps=100); lower train.cooldown or train.warmup_steps"),
    (["train.schedule=wsd", "train.budgets=[4,600]", "train.warmup_steps=1"],
     "train.cooldown=0.2 gives the budget of 4 steps no cool-down step; raise train.cooldown or the steps"),
    (["train.schedule=wsdd"], "train.schedule=wsdd is not a schedule; valid: cosine, wsd"),
    (["train.schedule=wsd", "train.cooldown_shape=sqrt"], "train.cooldown_shape=sqrt is not a cool-down shape; valid: "
     "linear, 1-sqrt"),
    (["train.schedule=wsd", "train.cooldown=0"], "train.cooldown=0 must be a fraction of the steps in (0, 1]"),
]


@pytest.mark.parametrize("overrides,message", REFUSED)
def test_bad_schedules_and_budgets_are_refused_in_the_preflight_of_every_job(entry, tmp_path, text_corpus, overrides,
                                                                              message):
    runs = tmp_path / "runs"
    code, err = entry("train", "-m", "encoding=nope,rope", "data=local", f"data.path={text_corpus}", *overrides,
                      f"runs_dir={runs}")
    assert code == 2, err
    assert err.strip().splitlines() == [f"posbench: error: {message}"]
    assert tree(tmp_path) == [], tree(tmp_path)


def test_each_budget_is_the_spec_at_that_many_steps_and_leaves_the_trunk_at_its_cool_down(compose, tmp_path, text_corpus):
    """Without training: a budget's branch is the spec with ``train.steps`` = the budget and no budgets
    (so the run id of that standalone run); it leaves the trunk at its cool-down's first step (14 and
    26 here); the trunk's snapshot, cut for a branch, keeps only what that run records."""
    from posbench.jobs.branches import Trunk, branch_spec, cut, directories

    spec = compose(*COMMON, "train.budgets=[20,36]", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    trunk = Trunk(spec)
    alone = compose(*COMMON, "train.steps=20", f"data.path={text_corpus}", f"runs_dir={tmp_path}")
    assert branch_spec(spec, 20).run_id == alone.run_id and [b.train.steps for b in trunk.branches] == [20, 36]
    assert [trunk.start_of(b) for b in trunk.branches] == [14, 26]
    assert directories(spec) == [b.folder for b in trunk.branches] + [trunk.folder]
    assert [d.path for d in directories(spec)] == [b.run_dir for b in trunk.branches] + [tmp_path / "trunks" / trunk.id]
    assert directories(alone) == [alone.folder] and directories(alone)[0].path == alone.run_dir
    state = {"next_step": 14, "probes": [{"step": s} for s in (5, 9, 10)], "last_loss": 1.0, "val_loss": 2.0,
             "history": [{"step": s, "loss": 3.0 - s / 10, **({"val_loss": 2.0} if s in (5, 8, 9, 10) else {})}
                         for s in range(2, 15)]}
    # the run of 20 steps logs every 2 steps and wherever it validates: every 8, at half its steps and at its probes
    mine = cut(state, trunk.branches[0])
    assert [e["step"] for e in mine["history"]] == [2, 4, 5, 6, 8, 10, 12, 14]
    assert [e["step"] for e in mine["history"] if "val_loss" in e] == [5, 8, 10]
    assert [p["step"] for p in mine["probes"]] == [5, 10]  # 0.25 and 0.5 of 20
