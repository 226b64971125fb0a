"""Perplexity at many lengths: the heart of the benchmark.

Protocol ``nonoverlapping`` (Press et al. 2022, section 4): the first T tokens of the validation
stream are cut into T / L consecutive windows of length L and every token of every window is
scored. T = longest length x ``eval.windows_at_max``, so every length scores the same tokens and
the numbers differ only by how much context (and which positions) the model is given.

Reported per length: mean loss in nats, perplexity exp(loss), bits per byte loss / ln 2 (tokens
are bytes), and the mean loss at each position within the window. A length the encoding cannot
represent (a learned table past its size) gets ``null`` with the reason.

Stand-alone use on a finished run, e.g. with longer lengths::

    posbench-eval run_dir=runs/<run_id> eval.multiples=[1,2,4,8,16,32]
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import hydra
import numpy as np
import torch
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf
from tqdm.auto import tqdm

from posbench.config import (
    CONF_DIR,
    check_multiples,
    encoding_params,
    eval_lengths,
    max_train_position,
    register_configs,
)
from posbench.data import load_corpus
from posbench.device import autocast, resolve_device
from posbench.errors import PosbenchError
from posbench.model import LanguageModel, ModelConfig, build_model
from posbench.results import CHECKPOINT, PER_POSITION, read_metrics, write_json, write_npz

log = logging.getLogger("posbench")


def scored_windows(n_val_tokens: int, max_len: int, windows_at_max: int) -> int:
    """How many windows of the longest length fit; fewer than asked only on a small corpus."""
    fit = (n_val_tokens - 1) // max_len
    if fit < 1:
        raise PosbenchError(
            f"validation split has {n_val_tokens} tokens, fewer than the longest evaluation window "
            f"({max_len} + 1); use a larger corpus, a smaller train_len or smaller eval.multiples"
        )
    if fit < windows_at_max:
        log.warning("validation split fits only %d windows of %d tokens (eval.windows_at_max=%d)", fit, max_len, windows_at_max)
    return min(fit, windows_at_max)


@torch.inference_mode()
def evaluate_model(
    model: LanguageModel,
    val_tokens: np.ndarray,
    train_len: int,
    eval_cfg,
    device: torch.device,
    progress: bool = True,
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Records (one per variant and length) and per-position mean losses (key
    ``<variant>/L<length>``) for one model. Variants are the encoding's evaluation-time variants
    (plain, and e.g. RoPE with YaRN), all from the same weights."""
    model.eval()
    enc = model.encoding
    lengths = eval_lengths(train_len, eval_cfg.multiples)
    total = max(lengths) * scored_windows(len(val_tokens), max(lengths), eval_cfg.windows_at_max)
    stream = torch.from_numpy(np.asarray(val_tokens[: total + 1]).astype(np.int64))
    variants = enc.eval_variants(eval_cfg)
    records, per_position = [], {}
    bar = tqdm(total=len(variants) * len(lengths) * total, unit="tok", desc="eval", disable=not progress, leave=False)
    try:
        for variant in variants:
            bar.set_description(f"eval {variant}")
            for L in lengths:
                enc.configure_eval(variant, L, eval_cfg)
                record, pos_loss = _score_length(model, stream, total, L, train_len, eval_cfg, device, variant, bar)
                records.append(record)
                if pos_loss is not None:
                    per_position[f"{variant}/L{L}"] = pos_loss
    finally:
        enc.configure_eval(enc.name, train_len, eval_cfg)  # back to the trained configuration
        bar.close()
    return records, per_position


def _score_length(model, stream, total, L, train_len, eval_cfg, device, variant, bar):
    """Score the first ``total`` tokens as windows of L: (record, per-position mean loss or None)."""
    base = {"variant": variant, "protocol": eval_cfg.protocol, "length": L, "multiple": L / train_len}
    reason = model.encoding.undefined_reason(L)
    if reason is not None:
        bar.update(total)
        return {**base, "tokens_scored": 0, "loss": None, "ppl": None, "bpb": None, "reason": reason}, None
    n = total // L
    inputs, targets = stream[: n * L].view(n, L), stream[1 : n * L + 1].view(n, L)
    pos_sum = torch.zeros(L, dtype=torch.float64)
    batch = max(1, eval_cfg.batch_tokens // L)
    positions = torch.arange(L, device=device)
    for s in range(0, n, batch):
        x, y = inputs[s : s + batch].to(device), targets[s : s + batch].to(device)
        with autocast(device):
            logits = model(x, positions)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="none").view_as(y)
        pos_sum += loss.sum(0).double().cpu()
        bar.update(x.numel())
    mean = float(pos_sum.sum() / (n * L))
    record = {**base, "tokens_scored": n * L, "loss": mean, "ppl": math.exp(mean), "bpb": mean / math.log(2), "reason": None}
    return record, (pos_sum / n).float().numpy()


# -- loading a run ------------------------------------------------------------------------------


def load_checkpoint(run_dir: Path) -> dict:
    path = Path(run_dir) / CHECKPOINT
    if not path.exists():
        raise PosbenchError(f"no checkpoint at {path}; train the run first (posbench-train)")
    try:
        # weights_only: tensors and plain values only, never arbitrary pickled objects
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise PosbenchError(f"checkpoint {path} is truncated or not a posbench checkpoint ({type(e).__name__})") from e
    if not isinstance(ckpt, dict) or "model" not in ckpt or "config" not in ckpt:
        raise PosbenchError(f"checkpoint {path} is not a posbench checkpoint (expected keys 'model' and 'config')")
    return ckpt


def model_from_checkpoint(ckpt: dict, device: torch.device) -> tuple[LanguageModel, DictConfig]:
    cfg = OmegaConf.create(ckpt["config"])
    model = build_model(
        ModelConfig(**cfg.model), cfg.encoding.name, encoding_params(cfg), cfg.train_len, max_train_position(cfg)
    )
    model.load_state_dict(ckpt["model"])
    return model.to(device), cfg


def merge_records(old: list[dict], new: list[dict]) -> list[dict]:
    """New records replace old ones of the same (variant, protocol, length); others are kept."""
    key = lambda r: (r["variant"], r["protocol"], r["length"])  # noqa: E731
    fresh = {key(r) for r in new}
    return sorted([r for r in old if key(r) not in fresh] + new, key=key)


def evaluate_run(run_dir: Path, eval_cfg, device_name: str = "auto", progress: bool = True) -> dict:
    """Evaluate a saved run at the lengths of ``eval_cfg`` and merge the results into its files."""
    run_dir = Path(run_dir)
    metrics = read_metrics(run_dir)
    if metrics is None:
        raise PosbenchError(f"{run_dir} is not a run directory with a readable metrics.json")
    device = resolve_device(device_name)
    model, cfg = model_from_checkpoint(load_checkpoint(run_dir), device)
    corpus = load_corpus(cfg.data)
    records, per_pos = evaluate_model(model, corpus.val, cfg.train_len, eval_cfg, device, progress)
    metrics["evaluations"] = merge_records(metrics.get("evaluations", []), records)
    write_per_position(run_dir, eval_cfg.protocol, per_pos)
    write_json(run_dir / "metrics.json", metrics)
    return metrics


def write_per_position(run_dir: Path, protocol: str, per_pos: dict[str, np.ndarray]) -> None:
    """Merge into per_position.npz; keys are ``<variant>/<protocol>/L<length>``."""
    path = Path(run_dir) / PER_POSITION
    arrays = dict(np.load(path)) if path.exists() else {}
    for key, value in per_pos.items():
        variant, length = key.rsplit("/", 1)
        arrays[f"{variant}/{protocol}/{length}"] = value
    write_npz(path, arrays)


register_configs()


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="evaluate")
def _hydra_main(cfg: DictConfig) -> None:
    from posbench.cli import user_errors

    with user_errors():
        if cfg.run_dir is None:
            raise PosbenchError("give the run to evaluate: posbench-eval run_dir=runs/<run_id>")
        check_multiples(cfg.eval.multiples)
        metrics = evaluate_run(Path(cfg.run_dir), cfg.eval, cfg.device)
        for r in metrics["evaluations"]:
            ppl = "null (" + r["reason"] + ")" if r["ppl"] is None else f"{r['ppl']:.3f}"
            print(f"{r['variant']:>12} {r['protocol']:>15} L={r['length']:<6} ppl={ppl}")


def main() -> None:
    from posbench.cli import hydra_entry

    hydra_entry(_hydra_main, CONF_DIR)


if __name__ == "__main__":
    main()
