"""Budget branches: one warmup-stable-decay trunk per configuration and a cool-down branch per budget.

    posbench-train encoding=rope train.schedule=wsd train.budgets=[600,1200,2400]

Hägele et al. 2024, "Scaling Laws and Compute-Optimal Training Beyond Fixed Training Durations"
(arXiv 2405.18392, section 3; reference code epfml/schedules-and-scaling, whose
``src/optim/utils.py:wsd_schedule`` is posbench/training/schedules.py's ``wsd``): before its cool-down a WSD
run's learning rate does not depend on its length, so the run of budget B is the constant-rate
trunk's state after ``cooldown_start(B)`` steps, cooled down for the rest. The paper branches off
a long run to save compute; here it is exact: **a branch is the run of ``train.steps=B`` bit for
bit** (on CPU; its weights, history, probes and evaluations), so it has that run's id and
directory, and everything downstream (posbench-eval, the report, a sweep's skipping and resuming)
treats it as any run.

The trunk (``<runs_dir>/trunks/<trunk_id>``, posbench/store/rundir.py) trains once, to the last branch
point any unfinished branch needs, and stores its full training state (model, optimiser, schedule,
RNG, history, probes) at each branch point as a snapshot. A branch starts as a killed run would
resume: its resume state is the snapshot, with the trunk's history and probes cut to what the run
of B steps records (the trunk validates and probes at every step any of its budgets does). A
branch whose snapshot exists never retrains the trunk; a budget added later extends it from its
last snapshot before that budget's branch point; a killed trunk resumes like a run.

Deviations from the paper: none in the schedule beyond posbench/training/schedules.py's; the trunk is never
evaluated or reported (it is no annealed model), and its snapshots are kept (delete
``<runs_dir>/trunks`` once every budget you want is complete).
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from posbench.core.device import resolve_device
from posbench.core.hydra_state import job_index
from posbench.core.interrupts import raise_deferred
from posbench.core.settings import to_dict
from posbench.data.corpus import corpus_stats
from posbench.data.load import load_training_corpus
from posbench.evaluation.probes import during_training_probe, probe_steps
from posbench.evaluation.scored_text import with_scored_text
from posbench.jobs.corpora import check_same_corpus
from posbench.spec import RunSpec
from posbench.store.identity import trunk_id
from posbench.store.rundir import TRUNKS, RunDir, TrunkDir
from posbench.training.schedules import cooldown_start
from posbench.training.data import TrainingData
from posbench.training.hooks import Hooks
from posbench.training.steps import StepRules
from posbench.training.trainer import train_model

log = logging.getLogger("posbench")


def branch_spec(spec, budget: int):
    """The run of one budget: the config with ``train.steps`` = the budget and no budgets."""
    raw = copy.deepcopy(spec.raw)
    raw["train"] = {**raw["train"], "steps": budget, "budgets": []}
    return RunSpec.from_config(raw)


def run_rules(tc, during_training) -> StepRules:
    """The step rules of a run with the ``train`` settings ``tc`` that probes at the fractions
    ``during_training`` of its steps (``eval.during_training``): a plain run's, and so a branch's."""
    return StepRules.of(tc, probe_steps(during_training, tc.steps))


def rules_of(spec) -> StepRules:
    """The step rules of the run of ``spec`` (no budgets): when it logs, validates and probes."""
    return run_rules(spec.train, spec.eval.during_training)


class Trunk:
    """The trunk of a ``train.budgets`` spec and the branches that start from it."""

    def __init__(self, spec):
        self.spec = spec
        self.id = trunk_id(spec.resolved(), recording(spec))
        self.folder = TrunkDir(Path(spec.runs_dir).expanduser() / TRUNKS / self.id)
        self.branches = [branch_spec(spec, b) for b in spec.train.budgets]

    def start_of(self, branch) -> int:
        """The trunk step at which ``branch`` leaves it (its cool-down's first step)."""
        return cooldown_start(branch.train.cooldown, branch.train.steps)

    def facts(self, branch) -> dict:
        """What a branch's metrics.json records of its budget and trunk (a report groups by budget)."""
        t = branch.train
        return {"trunk": self.id, "branch_step": self.start_of(branch),
                "budget": {"steps": t.steps, "tokens": t.steps * t.batch_size * branch.train_len}}

    # -- the branch's start ------------------------------------------------------------------------
    def seed(self, branch) -> dict:
        """Give an unfinished branch without a resume state of its own the trunk's snapshot as one
        (training the trunk when the snapshot is missing); returns the branch's metrics facts.
        Without a snapshot (a diverged trunk) the branch trains from step 0, the same run."""
        if not branch.folder.has_resume():
            k = self.start_of(branch)
            state = self.folder.load_snapshot(k)
            if state is None:
                self.train([k])
                state = self.folder.load_snapshot(k)
            if state is not None:
                branch.folder.save_resume(cut(state, branch))
                log.info("branch %s starts from trunk %s at step %d", branch.run_id, self.id, k)
        return self.facts(branch)

    # -- the trunk ---------------------------------------------------------------------------------
    def train(self, needed: list[int]) -> None:
        """Train the trunk until it has a snapshot at each step of ``needed`` (one pass, from the
        latest state before the first missing one). Waits for another process on the same trunk."""
        if not needed:
            return
        with self.folder.lock(wait=True):
            missing = sorted({k for k in needed if self.folder.load_snapshot(k) is None})
            status = self.folder.read_status()
            if not missing or (status.get("status") == "diverged" and not self.spec.retry_diverged):
                return
            self._train(missing)

    def _train(self, missing: list[int]) -> None:
        spec, folder = self.spec, self.folder
        corpus = load_training_corpus(spec.data)
        check_same_corpus(folder, corpus)
        folder.write_trunk_config(spec.resolved())
        folder.write_corpus(corpus_stats(corpus))
        self._start_before(missing[0], [b for b in self.branches if self.start_of(b) in missing])
        spec.runtime.apply()
        device = resolve_device(spec.runtime.device, job_index())
        model = spec.build_model().to(device)  # as posbench.jobs.train builds a run's: the plain run's first weights
        target = missing[-1]
        # constant after the warm-up (no cool-down step), to the last branch point asked for
        tc = replace(spec.train, steps=target, cooldown=0.0, budgets=[])
        ends = {self.start_of(b): b for b in self.branches}
        # every step at which a branch's run validates or probes before it leaves the trunk
        validate_at = {s for b in self.branches for s in rules_of(b).validate_at if s <= self.start_of(b)}
        probes = {s for b in self.branches for s in rules_of(b).probe_at if s <= self.start_of(b)}
        probe = None
        if spec.eval.during_training:  # built as posbench.jobs.train builds a run's (a subword tokenizer's in bytes)
            probe = during_training_probe(
                with_scored_text(spec.resolved_eval(corpus.fingerprint, spec.runtime.attention), corpus), device)
        log.info("trunk %s: training to step %d for the branches of budgets %s", self.id, target,
                 ", ".join(str(ends[k].train.steps) for k in missing if k in ends))
        t0 = time.perf_counter()
        result = train_model(
            model, TrainingData(corpus.train, corpus.val, spec.train_len, spec.seed, spec.task.build()), tc, device,
            rules=StepRules.of(tc, probes, validate_at, snapshots=missing),
            hooks=Hooks(desc=f"trunk {spec.row} L={spec.train_len}", resume_dir=folder, probe=probe,
                        snapshot_path=folder.snapshot_path),
            lr_mult=spec.encoding.lr_mult, compile=spec.runtime.compile, attention=spec.runtime.attention,
        )
        folder.write_history(result["history"])
        folder.write_status({"trunk_id": self.id, "status": result["status"], "snapshots": folder.snapshot_steps(),
                             "train_steps": result["train_steps"], "train_wall_s": result["train_wall_s"],
                             "this_pass_wall_s": time.perf_counter() - t0})
        if result["status"] == "completed":
            folder.clear_resume()  # the snapshots supersede it
        raise_deferred()  # a Ctrl-C or SIGTERM in the trunk's last step stops here, its snapshots saved

    def _start_before(self, first_missing: int, branches: list) -> None:
        """Make the trunk's resume.pt the latest state before ``first_missing`` that recorded all
        the ``branches`` record up to it (a budget added later may validate or probe at steps an
        earlier pass did not): its own resume.pt, else such a snapshot, else none (step 0)."""
        folder = self.folder
        state = folder.load_resume()
        if state is not None and (state["next_step"] >= first_missing or not covers(state, branches)):
            folder.clear_resume()
            state = None
        at = state["next_step"] if state is not None else 0
        for k in sorted((k for k in folder.snapshot_steps() if at < k < first_missing), reverse=True):
            snap = folder.load_snapshot(k)
            if snap is not None and covers(snap, branches):
                folder.resume_from_snapshot(k)
                return


def recording(spec) -> dict:
    """What a trunk records besides its weights, and so what its id names too: a branch's history
    and probes before its branch point are the trunk's, so they must be made as the run of the
    budget makes them (how often it logs and validates, and the probes' evaluation settings)."""
    t = spec.train
    out = {"log_every": t.log_every, "val_every": t.val_every, "val_batches": t.val_batches}
    if spec.eval.during_training:
        out["eval"] = to_dict(spec.eval)
    return out


def covers(state: dict, branches: list) -> bool:
    """Whether a trunk state recorded every log, validation and probe step the runs of ``branches``
    make up to the state's step (or their branch point)."""
    logged = {e["step"] for e in state["history"]}
    validated = {e["step"] for e in state["history"] if "val_loss" in e}
    probed = {p["step"] for p in state["probes"]}
    for b in branches:
        own = rules_of(b).recorded(min(state["next_step"], cooldown_start(b.train.cooldown, b.train.steps)))
        if not (own.logs <= logged and own.validates <= validated and own.probes <= probed):
            return False
    return True


def cut(state: dict, branch) -> dict:
    """The trunk's snapshot as the resume state of ``branch``'s run: the history entries, validation
    losses and probes that run records (the trunk logs more: it validates for every budget)."""
    own = rules_of(branch).recorded(state["next_step"])
    history = [{key: v for key, v in entry.items() if key != "val_loss" or entry["step"] in own.validates}
               for entry in state["history"] if entry["step"] in own.logs]
    vals = [e["val_loss"] for e in history if "val_loss" in e]
    return {**state, "history": history, "probes": [p for p in state["probes"] if p["step"] in own.probes],
            "last_loss": history[-1]["loss"] if history else float("nan"), "val_loss": vals[-1] if vals else None}


def pending(branch) -> bool:
    """A branch that still needs the trunk: not finished (nor diverged for good) and without a
    resume state of its own."""
    m = branch.folder.read_metrics(warn=False)
    done = m is not None and (m["status"] == "completed" or (m["status"] == "diverged" and not branch.retry_diverged))
    return not done and not branch.folder.has_resume()


def run_budgets(spec, run_branch: Callable[..., Path]) -> Path:
    """Every budget of ``spec``: the trunk (once, for every branch that needs it), then each branch
    through ``run_branch(branch, trunk)`` (posbench.jobs.train's run of one spec). Returns the trunk's
    directory."""
    trunk = Trunk(spec)
    trunk.train([trunk.start_of(b) for b in trunk.branches if pending(b)])
    for branch in trunk.branches:
        run_branch(branch, trunk)
    return trunk.folder.path


def directories(spec) -> list[RunDir]:
    """The directories a spec's training writes: its run's, or (budgets) its branches' and trunk's."""
    if not spec.train.budgets:
        return [spec.folder]
    trunk = Trunk(spec)
    return [*(b.folder for b in trunk.branches), trunk.folder]
