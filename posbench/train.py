"""``posbench-train``: compose -> check -> train -> evaluate -> write the run directory.

    posbench-train encoding=alibi model=small train_len=64
    posbench-train -m encoding=nope,sinusoidal,learned,rope,alibi train_len=64,128

Every job of the command line is checked before the first starts (posbench.cli). One run = one
directory ``<runs_dir>/<run_id>`` (posbench.results); the run id is a hash of the config that
determines the weights, so re-running a sweep skips the runs that are complete, and resumes the
ones that were killed. After training, the run is evaluated (posbench.evaluate) unless
``evaluate_after_training=false``.
"""

from __future__ import annotations

import logging
import platform
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from posbench import __version__
from posbench import extend as extension
from posbench.cli import hydra_app, in_sweep, job_index, launch_command
from posbench.config import encoding_params, max_train_position, position_lr_mult, task_of, validate
from posbench.data import check_corpus_fits, corpus_stats, load_corpus
from posbench.device import describe, resolve_device
from posbench.errors import PosbenchError
from posbench.evaluate import during_training_probe, evaluate_into, evaluate_run, probe_steps
from posbench.encodings import ModelShape, build_encoding
from posbench.model import ModelConfig, build_model
from posbench.protocols import eval_lengths, token_set
from posbench.results import (
    clear_resume,
    load_checkpoint,
    lock_holder,
    new_metrics,
    read_metrics,
    run_dir_of,
    run_id,
    run_lock,
    save_checkpoint,
    write_config,
    write_history,
    write_metrics,
    write_per_position,
)
from posbench.tasks.score import example_set, task_record_key
from posbench.tracking import make_tracker
from posbench.variants import row_names
from posbench.trainer import train_model

log = logging.getLogger("posbench")


def check_jobs(jobs: list[DictConfig]) -> None:
    """Everything about every job, before any trains: values first (nothing read or written),
    then whether each corpus holds the windows its jobs need (this may build a token cache)."""
    for cfg in jobs:
        validate(cfg)
    corpora: dict[str, object] = {}
    for cfg in jobs:
        key = OmegaConf.to_yaml(cfg.data)
        if key not in corpora:
            corpora[key] = load_corpus(cfg.data)
        lm = task_of(cfg) is None
        check_corpus_fits(corpora[key], cfg.train_len, cfg.eval if cfg.evaluate_after_training and lm else None)
        if not lm and cfg.evaluate_after_training:
            check_task_fits(corpora[key], cfg)


def check_task_fits(corpus, cfg: DictConfig) -> None:
    """A task's filler comes from the validation split: it must hold the longest evaluation window."""
    longest = max(eval_lengths(cfg.train_len, cfg.eval.multiples))
    if len(corpus.val) < longest + 2:
        raise PosbenchError(f"task {cfg.task.name} at {longest} tokens needs filler from a validation split of more "
                            f"than {longest + 1} tokens; it has {len(corpus.val)}: lower eval.multiples")


def run(cfg: DictConfig) -> Path:
    """Train (unless done) and evaluate one run; returns its directory.

    A completed run is not trained again: what the evaluation settings ask for and the run does
    not have yet is evaluated from its checkpoint (so a kill during evaluation loses no training).
    A diverged run is final unless ``retry_diverged=true``; a failed or killed one resumes."""
    validate(cfg)  # again, for callers that did not come through the command line (cheap)
    rid, run_dir = run_id(cfg), run_dir_of(cfg)
    if _settled(cfg, rid, run_dir):
        return run_dir
    # an extension run continues its parent: trained first when missing (or awaited, if another job is on it)
    parent = extension.wait_for_parent(extension.parent_config(cfg), run) if extension.is_extension(cfg) else None
    with run_lock(run_dir) as mine:
        if not mine:
            log.warning("skipping %s: another process (pid %s) is working on it", rid, lock_holder(run_dir))
            return run_dir
        if _settled(cfg, rid, run_dir):  # finished by that other process while we waited for the lock
            return run_dir
        m = read_metrics(run_dir, warn=False)
        if m is not None and m["status"] == "completed":
            _evaluate_missing(cfg, rid, run_dir)
        else:
            if m is not None and m["status"] == "diverged":  # asked to retry: from step 0, not the resume state
                clear_resume(run_dir)
            _train_and_evaluate(cfg, rid, run_dir, load_corpus(cfg.data), parent)
    return run_dir


def _settled(cfg: DictConfig, rid: str, run_dir: Path) -> bool:
    """Nothing to do: diverged (and no retry asked), or complete with every evaluation asked for."""
    m = read_metrics(run_dir, warn=False)
    if m is None:
        return False
    if m["status"] == "diverged" and not cfg.retry_diverged:
        log.warning("skipping %s: it diverged (loss %s at step %s); runs that diverge are final "
                    "(retry_diverged=true trains it again)", rid, m.get("final_train_loss"), m.get("train_steps"))
        return True
    if m["status"] != "completed":
        return False
    if not cfg.evaluate_after_training or not _missing_evaluations(cfg, m):
        log.info("skipping %s: already complete", rid)
        return True
    return False


def _missing_evaluations(cfg: DictConfig, metrics: dict) -> bool:
    """Whether the eval settings ask for a record the run does not have: more lengths, another
    protocol or token set (a task run: example set), a new variant (rope_scaling, bca), or
    attention diagnostics at a length."""
    corpus = metrics.get("corpus") or {}
    n_val, corpus_hash = corpus.get("val_tokens", 0), corpus.get("hash", "")
    m = cfg.model
    shape = ModelShape(m.d_model, m.n_heads, m.n_layers, cfg.train_len, max_train_position(cfg))
    enc = build_encoding(cfg.encoding.name, shape, encoding_params(cfg))
    enc.variant_tag = extension.tag(cfg)
    variants = row_names(enc, cfg.eval).values()
    lengths = eval_lengths(cfg.train_len, cfg.eval.multiples)
    if cfg.eval.attention_stats and not enc.uses_relative:
        have = {r["length"] for r in metrics.get("attention", [])}
        if any(L not in have and enc.undefined_reason(L) is None for L in lengths):
            return True
    task = task_of(cfg)
    if task is not None:
        have = {task_record_key(r) for r in metrics.get("task_evaluations", [])}
        eset = example_set(task, corpus_hash)
        return any((v, L, c, eset) not in have for v in variants for L in lengths for c in task.conditions())
    have = {(r["variant"], r["protocol"], r["length"], r.get("token_set")) for r in metrics.get("evaluations", [])}
    return any((v, p, L, token_set(p, cfg.eval, cfg.train_len, n_val, corpus_hash)) not in have
               for v in variants for p in cfg.eval.protocols for L in lengths)


def _evaluate_missing(cfg: DictConfig, rid: str, run_dir: Path) -> None:
    if cfg.get("threads"):
        torch.set_num_threads(cfg.threads)
    log.info("%s is trained; evaluating what its metrics do not have yet", rid)
    _, made = evaluate_run(run_dir, cfg.eval, cfg.device, attention=cfg.attention, only_missing=True)
    log.info("%s: %d new evaluation records", rid, made)


def _train_and_evaluate(cfg: DictConfig, rid: str, run_dir: Path, corpus, parent: Path | None = None) -> None:
    """Train from scratch, or (``parent``: an extension run's parent directory) continue its final weights."""
    if cfg.get("threads"):
        torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device, job_index())
    torch.manual_seed(cfg.seed)
    model = build_model(
        ModelConfig(**cfg.model), cfg.encoding.name, encoding_params(cfg), cfg.train_len, max_train_position(cfg)
    )
    if parent is not None:
        model.load_state_dict(load_checkpoint(parent)["model"])
        extension.apply(model, cfg)
    model = model.to(device)
    model.attention = cfg.attention
    # what trains, at which window: the run's own settings, or the extension's fine-tune
    train_cfg, window = (extension.finetune_settings(cfg), cfg.extend.length) if parent else (cfg.train, cfg.train_len)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    write_config(run_dir, resolved)
    log.info("run %s: %s, %d parameters, %s", rid, cfg.encoding.name, model.num_params(), describe(device))
    tracker = make_tracker(cfg.logger, rid, run_dir, resolved)
    task = task_of(cfg)
    metrics = new_metrics(
        rid,
        encoding=cfg.encoding.name, model=cfg.model.name, train_len=cfg.train_len, seed=cfg.seed,
        params=model.num_params(), device=describe(device), torch_version=torch.__version__,
        posbench_version=__version__, python=platform.python_version(), corpus=corpus_stats(corpus),
        task=task.name if task is not None else "lm",
        # how to make this run again; sweeps are recorded once, in their multirun.yaml
        commands=[cmd] if (cmd := launch_command("posbench-train")) and not in_sweep() else [],
        **({"parent": parent.name, "extend": OmegaConf.to_container(cfg.extend, resolve=True)} if parent else {}),
    )
    probe = None
    if cfg.eval.during_training:
        probe = during_training_probe(corpus.val, cfg.train_len, cfg.eval, device, cfg.data.doc_separator,
                                      corpus.fingerprint["hash"])
    try:
        if train_cfg.steps > 0:
            result = train_model(
                model, corpus.train, corpus.val, train_cfg, window, cfg.seed, device,
                lr_mult=position_lr_mult(cfg), compile=cfg.compile, tracker=tracker, resume_dir=run_dir,
                desc=f"train {cfg.encoding.name}{extension.tag(cfg)}{' ' + task.name if task else ''} L={window}",
                probe=probe, probe_steps=probe_steps(cfg.eval.during_training, train_cfg.steps), task=task,
            )
        else:  # an extension run of 0 steps: the parent's weights with the method, evaluated as they are
            result = {"status": "completed", "history": [], "train_steps": 0, "train_tokens": 0, "train_wall_s": 0.0}
        write_history(run_dir, result.pop("history"))
        metrics.update(result)
        if result["status"] == "completed":
            save_checkpoint(run_dir, model.state_dict(), resolved)
            metrics["status"] = "completed"
            # recorded before evaluating: a kill during evaluation keeps the training, and the next
            # run of the command evaluates from the checkpoint
            write_metrics(run_dir, metrics)
            clear_resume(run_dir)  # the final checkpoint supersedes it
            if cfg.evaluate_after_training:
                _, per_pos = evaluate_into(metrics, model, cfg, cfg.eval, corpus, device, tracker=tracker)
                if per_pos:
                    write_per_position(run_dir, per_pos)
    except Exception as e:
        if metrics["status"] == "completed":  # training is safe; the evaluation is retried on the next run
            metrics["evaluation_error"] = f"{type(e).__name__}: {e}"
        else:
            metrics["status"], metrics["error"] = "failed", f"{type(e).__name__}: {e}"
        write_metrics(run_dir, metrics)
        raise
    finally:
        tracker.finish()
    write_metrics(run_dir, metrics)


main = hydra_app("config", run, check_jobs)

if __name__ == "__main__":
    main()
