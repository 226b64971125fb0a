"""Training loop and the Hydra entry point ``posbench-train``.

    posbench-train encoding=alibi model=small train_len=64
    posbench-train -m encoding=nope,sinusoidal,learned,rope,alibi train_len=64,128

One run = one directory ``<runs_dir>/<run_id>`` (see posbench.results). The run id is a hash of
the config that determines the weights, so re-running a sweep skips the runs that are complete.
After training, the run is evaluated (posbench.evaluate) unless ``evaluate_after_training=false``.
"""

from __future__ import annotations

import logging
import math
import platform
import time
from pathlib import Path

import hydra
import numpy as np
import torch
import torch.nn.functional as F
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

from posbench import __version__
from posbench.cli import launch_command
from posbench.config import (
    CONF_DIR,
    encoding_params,
    eval_lengths,
    max_train_position,
    position_lr_mult,
    register_configs,
    run_id,
    validate,
)
from posbench.data import corpus_stats, load_corpus, sample_batch
from posbench.device import autocast, describe, resolve_device
from posbench.errors import PosbenchError
from posbench.evaluate import evaluate_model, write_per_position
from posbench.model import LanguageModel, ModelConfig, build_model
from posbench.protocols import scored_total
from posbench.results import (
    CHECKPOINT,
    CONFIG,
    HISTORY,
    METRICS,
    RESUME,
    atomic_torch_save,
    atomic_write_text,
    is_complete,
    write_json,
)
from posbench.tracking import make_tracker

log = logging.getLogger("posbench")
VALIDATION_SEED = 20_240_229


def make_optimizer(model: LanguageModel, tc, lr_mult: float = 1.0) -> torch.optim.Optimizer:
    """AdamW with three groups: matrices (decayed), norms/biases (not decayed), and the encoding's
    own position parameters (not decayed, learning rate x the encoding's ``lr_mult``), so that
    learned position parameters are not held at their initialisation by decay or a too-small step."""
    encoding = getattr(model, "encoding", None)  # the benchmark's reference GPT has none
    enc_ids = {id(p) for p in encoding.parameters()} if encoding is not None else set()
    decay, no_decay, position = [], [], []
    for p in model.parameters():  # tied weights appear once
        if not p.requires_grad:
            continue
        if id(p) in enc_ids:
            position.append(p)
        elif p.dim() >= 2:
            decay.append(p)
        else:
            no_decay.append(p)
    groups = [
        {"params": decay, "weight_decay": tc.weight_decay, "lr": tc.lr},
        {"params": no_decay, "weight_decay": 0.0, "lr": tc.lr},
        {"params": position, "weight_decay": 0.0, "lr": tc.lr * lr_mult},
    ]
    return torch.optim.AdamW([g for g in groups if g["params"]], betas=(tc.beta1, tc.beta2))


def lr_factor(step: int, tc) -> float:
    """Linear warm-up to 1, then cosine decay to ``min_lr_ratio`` at the last step."""
    if step < tc.warmup_steps:
        return (step + 1) / tc.warmup_steps
    progress = (step - tc.warmup_steps) / max(1, tc.steps - tc.warmup_steps)
    return tc.min_lr_ratio + (1 - tc.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def random_positions(max_position: int, length: int, seed: int, step: int) -> torch.Tensor:
    """Randomized positions (Ruoss et al. 2023): a sorted sample of ``length`` distinct positions
    from [0, max_position), one per step (shared by the batch), reproducible from (seed, step)."""
    rng = np.random.default_rng([seed, step, 1])
    return torch.from_numpy(np.sort(rng.choice(max_position, size=length, replace=False)))


@torch.no_grad()
def validation_loss(model, val_tokens, cfg, device) -> float:
    model.eval()
    losses = []
    for i in range(cfg.train.val_batches):
        # fixed windows, so every validation point and every run sees the same text
        x, y = sample_batch(val_tokens, cfg.train.batch_size, cfg.train_len, seed=VALIDATION_SEED, step=i)
        with autocast(device):
            logits = model(x.to(device))
        losses.append(F.cross_entropy(logits.float().flatten(0, 1), y.to(device).flatten()).item())
    model.train()
    return sum(losses) / len(losses)


def save_resume_state(path: Path, model, opt, sched, step: int, state: dict) -> None:
    """Everything a killed run needs to continue bit for bit: weights, optimiser and schedule,
    RNG state, the next step (the data position: batches depend only on seed and step)."""
    atomic_torch_save(path, {
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "next_step": step,
        **state,
    })


def load_resume_state(path: Path, model, opt, sched) -> dict | None:
    if not path.exists():
        return None
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # unreadable (a torn disk, another tool's file): start over, say so
        log.warning("ignoring unreadable resume state %s (%s); training from step 0", path, type(e).__name__)
        return None
    # applied only once the whole file has been read: a failure part-way through applying it would
    # leave half-restored weights, so it is an error of the run rather than a silent fresh start
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    sched.load_state_dict(ckpt["scheduler"])
    torch.set_rng_state(ckpt["torch_rng"])
    log.info("resuming from step %d (%s)", ckpt["next_step"], path)
    return ckpt


def train_model(model: LanguageModel, corpus, cfg: DictConfig, device: torch.device, tracker, run_dir: Path | None = None) -> dict:
    """Train in place; returns status, timing and the history of the run.

    With a run directory, the full training state is saved to ``resume.pt`` every
    ``train.checkpoint_every`` steps, and a run that finds one continues from it."""
    tc = cfg.train
    opt = make_optimizer(model, tc, position_lr_mult(cfg))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, tc))
    positions = torch.arange(cfg.train_len, device=device)
    history, status, last_loss, val_loss, start, wall_before = [], "completed", float("nan"), None, 0, 0.0
    resume_path = Path(run_dir) / RESUME if run_dir is not None else None
    if resume_path is not None and (state := load_resume_state(resume_path, model, opt, sched)) is not None:
        start, history, wall_before = state["next_step"], state["history"], state["train_wall_s"]
        last_loss, val_loss = state["last_loss"], state["val_loss"]
    tokens_per_step = tc.batch_size * cfg.train_len
    model.train()
    model.attention = cfg.attention
    # compiled forward shares the parameters; the plain module is what gets saved and evaluated
    forward = torch.compile(model) if cfg.compile else model
    t0 = t_log = time.perf_counter()
    bar = tqdm(
        range(start, tc.steps), initial=start, total=tc.steps,
        desc=f"train {cfg.encoding.name} L={cfg.train_len}", unit="step", leave=False,
    )
    for step in bar:
        x, y = sample_batch(corpus.train, tc.batch_size, cfg.train_len, cfg.seed, step)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        if tc.random_positions:
            positions = random_positions(tc.random_positions, cfg.train_len, cfg.seed, step).to(device)
        with autocast(device):
            logits = forward(x, positions)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)

        last = step == tc.steps - 1
        if (step + 1) % tc.log_every == 0 or last:
            # reading the loss syncs the device, so it happens only at log steps
            last_loss, gn = loss.item(), grad_norm.item()
            now = time.perf_counter()
            tok_s = tokens_per_step * ((step % tc.log_every) + 1) / max(now - t_log, 1e-9)
            t_log = now
            entry = {"step": step + 1, "loss": last_loss, "lr": sched.get_last_lr()[0], "grad_norm": gn, "tokens_per_s": tok_s}
            if not (math.isfinite(last_loss) and math.isfinite(gn)):
                status = "diverged"
                history.append(entry)
                log.warning("loss became %s at step %d: run marked diverged", last_loss, step + 1)
                break
            if (step + 1) % tc.val_every == 0 or last:
                val_loss = entry["val_loss"] = validation_loss(model, corpus.val, cfg, device)
            history.append(entry)
            tracker.log({k: v for k, v in entry.items() if k != "step"}, step=step + 1)
            bar.set_postfix(loss=f"{last_loss:.3f}", tok_s=f"{tok_s:,.0f}")
        if resume_path is not None and (step + 1) % tc.checkpoint_every == 0 and not last:
            save_resume_state(resume_path, model, opt, sched, step + 1, {
                "history": history, "last_loss": last_loss, "val_loss": val_loss,
                "train_wall_s": wall_before + time.perf_counter() - t0,
            })
    bar.close()
    wall = wall_before + time.perf_counter() - t0
    steps_done = history[-1]["step"] if history else 0
    return {
        "status": status,
        "train_wall_s": wall,
        "train_steps": steps_done,
        "train_tokens": steps_done * tokens_per_step,
        "final_train_loss": last_loss,
        "final_val_loss": val_loss,
        "history": history,
    }


def in_sweep() -> bool:
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def job_index() -> int:
    """This job's number within a Hydra sweep (0 outside one)."""
    if not HydraConfig.initialized():  # called outside Hydra (tests, notebooks)
        return 0
    return int(OmegaConf.select(HydraConfig.get(), "job.num", default=None) or 0)


def run(cfg: DictConfig) -> Path:
    """Train (unless complete) and evaluate one run; returns its directory."""
    validate(cfg)
    rid = run_id(cfg)
    run_dir = Path(cfg.runs_dir).expanduser() / rid
    if is_complete(run_dir):
        log.info("skipping %s: already complete", rid)
        return run_dir
    if cfg.get("threads"):
        torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device, job_index())
    corpus = load_corpus(cfg.data)
    if cfg.evaluate_after_training:  # fail before training, not after, if evaluation cannot run
        scored_total(len(corpus.val), max(eval_lengths(cfg.train_len, cfg.eval.multiples)), cfg.eval.windows_at_max, cfg.eval.protocols)
    if len(corpus.val) < cfg.train_len + 2:
        raise PosbenchError(f"train_len={cfg.train_len} is longer than the validation split allows ({len(corpus.val)} tokens)")

    torch.manual_seed(cfg.seed)
    model = build_model(
        ModelConfig(**cfg.model), cfg.encoding.name, encoding_params(cfg), cfg.train_len, max_train_position(cfg)
    ).to(device)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / CONFIG, OmegaConf.to_yaml(resolved))
    log.info("run %s: %s, %d parameters, %s", rid, cfg.encoding.name, model.num_params(), describe(device))
    tracker = make_tracker(cfg.logger, rid, run_dir, resolved)
    metrics = {
        "schema_version": 1,
        "run_id": rid,
        "status": "failed",
        "encoding": cfg.encoding.name,
        "model": cfg.model.name,
        "train_len": cfg.train_len,
        "seed": cfg.seed,
        "params": model.num_params(),
        "device": describe(device),
        "torch_version": torch.__version__,
        "posbench_version": __version__,
        "python": platform.python_version(),
        "corpus": corpus_stats(corpus),
        "evaluations": [],
        # how to make this run again; sweeps are recorded once, in their multirun.yaml
        "commands": [cmd] if (cmd := launch_command("posbench-train")) and not in_sweep() else [],
    }
    try:
        result = train_model(model, corpus, cfg, device, tracker, run_dir)
        history = result.pop("history")
        metrics.update(result)
        write_json(run_dir / HISTORY, history)
        if result["status"] == "completed":
            atomic_torch_save(run_dir / CHECKPOINT, {"model": model.state_dict(), "config": resolved})
            (run_dir / RESUME).unlink(missing_ok=True)  # the final checkpoint supersedes it
            if cfg.evaluate_after_training:
                records, per_pos = evaluate_model(model, corpus.val, cfg.train_len, cfg.eval, device, doc_separator=cfg.data.doc_separator)
                metrics["evaluations"] = records
                write_per_position(run_dir, per_pos)
                tracker.log_evaluation(records)
                for variant in dict.fromkeys(r["variant"] for r in records):
                    summary = ", ".join(
                        f"{r['multiple']:g}x={r['ppl']:.2f}" if r["ppl"] else f"{r['multiple']:g}x=null"
                        for r in records if r["variant"] == variant
                    )
                    log.info("%s ppl: %s", variant, summary)
    except Exception as e:
        metrics["status"], metrics["error"] = "failed", f"{type(e).__name__}: {e}"
        write_json(run_dir / METRICS, metrics)
        raise
    finally:
        tracker.finish()
    write_json(run_dir / METRICS, metrics)
    return run_dir


register_configs()


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def _hydra_main(cfg: DictConfig) -> None:
    from posbench.cli import user_errors

    with user_errors():
        try:
            run(cfg)
        except PosbenchError:
            raise
        except Exception:
            # one failed run must not sink a sweep: it is recorded as failed and the sweep goes on
            if in_sweep():
                log.exception("run failed; recorded as status=failed, continuing the sweep")
            else:
                raise


def main() -> None:
    from posbench.cli import hydra_entry

    hydra_entry(_hydra_main, CONF_DIR)


if __name__ == "__main__":
    main()
