"""One run, from its RunSpec: train -> evaluate -> write the run directory (``posbench-train``'s job;
its command line is posbench/cli/train.py).

    posbench-train encoding=alibi model=small train_len=64
    posbench-train -m encoding=nope,sinusoidal,learned,rope,alibi train_len=64,128

Every job of the command line is converted and checked before the first starts. One run = one
directory ``<runs_dir>/<run_id>`` (posbench.store.rundir); the run id (posbench.store.identity) is a hash of the config that
determines the weights, so re-running a sweep skips the runs that are complete, and resumes the
ones that were killed. After training, the run is evaluated (posbench.evaluation.evaluate) unless
``evaluate_after_training=false``.
"""

from __future__ import annotations

import logging
import platform
from dataclasses import replace
from pathlib import Path

import torch

from posbench import __version__
from posbench.core.device import describe, resolve_device
from posbench.core.errors import PosbenchError
from posbench.core.hydra_state import in_sweep, job_index, launch_command
from posbench.core.interrupts import raise_deferred
from posbench.core.settings import to_dict
from posbench.core.tracking import make_tracker
from posbench.data.corpus import corpus_stats
from posbench.data.load import load_training_corpus
from posbench.evaluation.evaluate import evaluate_into
from posbench.evaluation.plan import missing
from posbench.evaluation.probes import during_training_probe
from posbench.evaluation.scored_text import with_scored_text
from posbench.jobs import branches
from posbench.jobs.corpora import check_same_corpus, corpora_for_checks
from posbench.jobs.evaluate import asked_for, evaluate_run
from posbench.jobs.summary import summary_line
from posbench.spec import RunSpec, check_variant_rows
from posbench.store.rundir import RunDir, new_metrics
from posbench.training import extend as extension
from posbench.training.data import TrainingData
from posbench.training.hooks import Hooks
from posbench.training.parallel import Processes, Word
from posbench.training.trainer import train_model

log = logging.getLogger("posbench")


def check_jobs(jobs: list[RunSpec]) -> None:
    """Everything about every job, before any trains (their values were checked when they were
    converted): whether each corpus holds the windows its jobs need (this may build a token cache,
    removed again when the command is refused), whether a run that exists already was trained on
    the corpus the command gives now, and whether every evaluation variant asked for gives a row."""
    with corpora_for_checks() as corpus_of:
        for spec in jobs:
            corpus = corpus_of(spec.data)
            spec.check_corpus(corpus)
            # skipping, resuming or evaluating a run made from other text would mix two corpora in one run
            for folder in branches.directories(spec):  # a budgets job: every branch and its trunk
                check_same_corpus(folder, corpus)
            if spec.is_extension:  # and an extension run continues its parent's weights
                check_same_corpus(spec.parent().folder, corpus)
            _check_processes(spec, Processes.from_env())
        check_variant_rows(jobs)
    if note := two_seeds_note(jobs):
        log.warning(note)


def two_seeds_note(jobs: list[RunSpec]) -> str | None:
    """Said before a sweep trains where every configuration has exactly 2 seeds: between trained rows
    the seed is the unit of evidence, and 2 seeds give the seed term of every interval 1 degree of
    freedom (posbench/report/analysis/bootstrap.py), so the report will call most rows undecided."""
    seeds: dict[str, set[int]] = {}
    for spec in jobs:
        seeds.setdefault(repr(replace(spec, seed=0)), set()).add(spec.seed)
    if len(jobs) < 2 or {len(s) for s in seeds.values()} != {2}:
        return None
    used = sorted({x for s in seeds.values() for x in s})
    more = ",".join(map(str, [*used, max(used) + 1]))
    return (f"2 seeds per configuration (seeds {', '.join(map(str, used))}): every interval between trained rows will "
            "rest on a t with 1 degree of freedom (12.7 at 95%), so the report can resolve only large differences and "
            f"will say undecided elsewhere; a third seed (seed={more}) narrows the seed term's interval about 3.6-fold "
            "(12.7 / sqrt 2 -> 4.3 / sqrt 3)")


def _check_processes(spec: RunSpec, processes: Processes) -> None:
    """A run over several processes (torchrun) trains one plain run: its batch divides among them."""
    if processes.world == 1:
        return
    what = "train.budgets" if spec.train.budgets else "an extension run (extend=)" if spec.is_extension else None
    if what:
        raise PosbenchError(f"{what} does not train over several processes yet (WORLD_SIZE={processes.world}); "
                            "run it in one process, or train its plain run with torchrun")
    processes.check(spec.train.batch_size)


def run(spec: RunSpec) -> Path:
    """Train (unless done) and evaluate one run; returns its directory.

    A completed run is not trained again: what the evaluation settings ask for and the run does
    not have yet is evaluated from its checkpoint (so a kill during evaluation loses no training).
    A diverged run is final unless ``retry_diverged=true``; a failed or killed one resumes.
    With ``train.budgets``: the WSD trunk, then one run per budget (posbench/jobs/branches.py);
    returns the trunk's directory."""
    spec.check()  # again, for callers that did not come through the command line (cheap)
    processes = Processes.from_env()  # torchrun's processes (posbench/training/parallel.py); else one
    processes.start(_device(spec, processes))
    if not processes.main:
        log.setLevel(logging.WARNING)  # process 0 says what happens; the others only what goes wrong
        return _follow(spec, processes)
    if spec.train.budgets:
        return branches.run_budgets(spec, _run_and_print)
    word = Word(processes)
    try:
        run_dir = _run_and_print(spec, word=word)
    finally:
        word.give(False)  # the others are told to move on where this process did not train
    log.info("run directory: %s", run_dir)
    return run_dir


def _device(spec: RunSpec, processes: Processes) -> torch.device:
    return processes.device(resolve_device(spec.runtime.device, job_index()))


def _follow(spec: RunSpec, processes: Processes) -> Path:
    """A process of a data-parallel run other than the first: it trains when process 0 does (on
    its share of each batch), and writes nothing."""
    if not Word(processes).wait():
        return spec.run_dir
    spec.runtime.apply()
    device = _device(spec, processes)
    model = spec.build_model().to(device)  # the same model as process 0 builds (DDP also copies process 0's at the start)
    corpus = load_training_corpus(spec.data)
    data = TrainingData(corpus.train, corpus.val, spec.train_len, spec.seed, spec.task.build())
    _train(spec, model, data, device, spec.train, Hooks(resume_dir=spec.folder))
    return spec.run_dir


def _train(spec: RunSpec, model, data: TrainingData, device: torch.device, train_cfg, hooks: Hooks) -> dict:
    """Train ``model`` on ``data`` with ``train_cfg`` (the run's, or an extension's fine-tune), in
    this process's share of a data-parallel run."""
    return train_model(model, data, train_cfg, device, rules=branches.run_rules(train_cfg, spec.eval.during_training),
                       hooks=hooks, processes=Processes.from_env(), lr_mult=spec.encoding.lr_mult,
                       compile=spec.runtime.compile, attention=spec.runtime.attention)


def _run_and_print(spec: RunSpec, trunk: branches.Trunk | None = None, word: Word | None = None) -> Path:
    """``_run``, then one line on stdout for the run (a failed one's too; each budget's branch its own)."""
    try:
        return _run(spec, trunk, word)
    finally:
        try:
            print(_summary(spec), flush=True)
        except Exception as e:  # noqa: BLE001 - the summary must never hide the run's own error
            log.warning("no result line for %s: %s", spec.run_id, e)


def _summary(spec: RunSpec) -> str:
    m = spec.folder.read_metrics(warn=False)
    asked = {p.key for p in asked_for(spec, m)} if m is not None else set()
    return summary_line(spec.run_id, spec.run_dir, m, asked, list(spec.eval.protocols))


def _run(spec: RunSpec, trunk: branches.Trunk | None = None, word: Word | None = None) -> Path:
    """One run; ``trunk``: the run is a budget's branch, started from that trunk's snapshot;
    ``word``: the other processes of a data-parallel run, told when this one trains."""
    folder = spec.folder
    if _settled(spec):
        return folder.path
    # an extension run continues its parent: trained first when missing (or awaited, if another job is on it)
    parent = extension.wait_for_parent((p := spec.parent()).run_id, p.folder, lambda: run(p)) if spec.is_extension else None
    with folder.lock() as mine:
        if not mine:
            log.warning("skipping %s: another process (pid %s) is working on it", spec.run_id, folder.lock_holder())
            return folder.path
        if _settled(spec):  # finished by that other process while we waited for the lock
            return folder.path
        m = folder.read_metrics(warn=False)
        if m is not None and m["status"] == "completed":
            _evaluate_missing(spec)
        else:
            if m is not None and m["status"] == "diverged":  # asked to retry: from step 0, not the resume state
                folder.clear_resume()
            facts = trunk.seed(spec) if trunk is not None else {}
            _train_and_evaluate(spec, load_training_corpus(spec.data), parent, facts, word)
    return folder.path


def _settled(spec: RunSpec) -> bool:
    """Nothing to do: diverged (and no retry asked), or complete with every evaluation asked for."""
    rid, m = spec.run_id, spec.folder.read_metrics(warn=False)
    if m is None:
        return False
    if m["status"] == "diverged" and not spec.retry_diverged:
        loss = m.get("final_train_loss")  # NaN and inf are stored as null
        log.warning("skipping %s: it diverged (loss %s at step %s); runs that diverge are final "
                    "(retry_diverged=true trains it again)", rid, "not finite" if loss is None else f"{loss:.4g}",
                    m.get("train_steps"))
        return True
    if m["status"] != "completed":
        return False
    if not spec.evaluate_after_training or not _missing_evaluations(spec, m):
        log.info("skipping %s: already complete", rid)
        log_finished(spec, m)
        return True
    return False


def log_finished(spec: RunSpec, metrics: dict) -> None:
    """A complete run met again under a tracker (``logger=wandb``): what it recorded goes to the tracker
    (its training curve from history.json, its final losses, its evaluation records), so that a run
    trained before tracking was asked for is logged rather than skipped in silence."""
    if spec.logger.name == "none":
        return
    rid, folder = spec.run_id, spec.folder
    try:
        history, config = folder.read_history(), folder.read_run_config()
    except ValueError as e:
        log.warning("logger=%s: %s not logged: %s", spec.logger.name, rid, e)
        return
    tracker = make_tracker(spec.logger, rid, folder.path, config)
    try:
        for row in [] if history is None else history.to_dict("records"):
            step = int(row.pop("step"))
            tracker.log({f"train/{k}": v for k, v in row.items() if v == v}, step=step)  # NaN: not recorded
        tracker.log({k: metrics[k] for k in ("final_train_loss", "final_val_loss") if metrics.get(k) is not None})
        if metrics.get("evaluations"):
            tracker.log_evaluation(metrics["evaluations"])
        if metrics.get("task_evaluations"):
            tracker.log_task_evaluation(metrics["task_evaluations"])
    finally:
        tracker.finish()
    log.info("logger=%s: logged the finished run %s (%d training points, %d evaluation records)", spec.logger.name,
             rid, 0 if history is None else len(history),
             len(metrics.get("evaluations") or []) + len(metrics.get("task_evaluations") or []))


def _missing_evaluations(spec: RunSpec, metrics: dict) -> bool:
    """Whether the eval settings ask for a record the run does not have (more lengths, another
    protocol, token or example set, a new variant, attention diagnostics at a length): the same
    plan the evaluation scores (posbench/evaluation/plan.py), on the corpus the run recorded."""
    return bool(missing(asked_for(spec, metrics), metrics))


def _evaluate_missing(spec: RunSpec) -> None:
    spec.runtime.apply()
    log.info("%s is trained; evaluating what its metrics do not have yet", spec.run_id)
    _, made = evaluate_run(spec.folder, spec.eval, spec.runtime, only_missing=True)
    log.info("%s: %d new evaluation records", spec.run_id, made)


def _train_and_evaluate(spec: RunSpec, corpus, parent: RunDir | None = None, facts: dict | None = None,
                        word: Word | None = None) -> None:
    """Train from scratch, or (``parent``: an extension run's parent directory) continue its final
    weights. ``facts``: more for its metrics (a branch's budget and trunk)."""
    rid, folder = spec.run_id, spec.folder
    check_same_corpus(folder, corpus)  # a killed or failed run resumes on the corpus it started on
    spec.runtime.apply()
    device = _device(spec, Processes.from_env())
    model = spec.build_model(parent.load_checkpoint()["model"] if parent is not None else None).to(device)
    # what trains, at which window: the run's own settings, or the extension's fine-tune
    train_cfg, window = ((extension.finetune_settings(spec.extend, spec.train, spec.train_len),
                          extension.finetune_window(spec.extend, spec.train_len)) if parent else (spec.train, spec.train_len))
    resolved = spec.resolved()
    folder.write_config(resolved)
    folder.write_corpus(corpus_stats(corpus))  # what a resume after a kill checks the corpus against
    log.info("run %s: %s, %d parameters, %s", rid, spec.row, model.num_params(), describe(device))
    tracker = make_tracker(spec.logger, rid, folder.path, resolved)
    task = spec.task.build()
    metrics = new_metrics(
        rid,
        # a subword tokenizer's runs are another model to the report: perplexity per token is another measure
        encoding=spec.encoding.name, train_len=spec.train_len, seed=spec.seed,
        model=spec.model.name if spec.data.tokenizer.is_bytes else f"{spec.model.name}/{spec.data.tokenizer.label}",
        params=model.num_params(), device=describe(device), torch_version=torch.__version__,
        posbench_version=__version__, python=platform.python_version(), corpus=corpus_stats(corpus),
        task=spec.task.name,
        # how to make this run again; sweeps are recorded once, in their multirun.yaml
        commands=[cmd] if (cmd := launch_command("posbench-train")) and not in_sweep() else [],
        **({"parent": parent.name, "extend": to_dict(spec.extend)} if parent else {}),
        **(facts or {}),
    )
    probe = None
    if spec.eval.during_training:
        probe = during_training_probe(with_scored_text(spec.resolved_eval(corpus.fingerprint, spec.runtime.attention),
                                                       corpus), device)
    try:
        if train_cfg.steps > 0:
            if word is not None:
                word.give(True)  # the other processes of a data-parallel run train with this one
            desc = f"train {spec.row}{spec.extend.tag(spec.train_len)}{'' if spec.task.is_lm else ' ' + task.name} L={window}"
            data = TrainingData(corpus.train, corpus.val, window, spec.seed,
                                extension.extension_task(spec.extend, spec.train_len, task) if parent else task,  # state passing: a stream
                                extension.training_positions(spec.extend, spec.train_len, spec.seed) if parent else None)
            result = _train(spec, model, data, device, train_cfg, Hooks(desc=desc, tracker=tracker, resume_dir=folder, probe=probe))
        else:  # an extension run of 0 steps: the parent's weights with the method, evaluated as they are
            result = {"status": "completed", "history": [], "train_steps": 0, "train_tokens": 0, "train_wall_s": 0.0}
        folder.write_history(result.pop("history"))
        metrics.update(result)
        if result["status"] == "completed":
            folder.save_checkpoint(model.state_dict(), resolved)
            metrics["status"] = "completed"
            # recorded before evaluating: a kill during evaluation keeps the training, and the next
            # run of the command evaluates from the checkpoint
            folder.write_metrics(metrics)
            folder.clear_resume()  # the final checkpoint supersedes it
            raise_deferred()  # a Ctrl-C or SIGTERM in the last step stops here, the training saved
            if spec.evaluate_after_training:
                ev = with_scored_text(spec.resolved_eval(corpus.fingerprint, spec.runtime.attention), corpus)
                _, per_pos, token_losses = evaluate_into(metrics, model, ev, device, tracker=tracker)
                if per_pos:
                    folder.write_per_position(per_pos)
                if token_losses:
                    folder.write_token_losses(token_losses)
    except Exception as e:
        if metrics["status"] == "completed":  # training is safe; the evaluation is retried on the next run
            metrics["evaluation_error"] = f"{type(e).__name__}: {e}"
        else:
            metrics["status"], metrics["error"] = "failed", f"{type(e).__name__}: {e}"
        folder.write_metrics(metrics)
        raise
    finally:
        tracker.finish()
    folder.write_metrics(metrics)
