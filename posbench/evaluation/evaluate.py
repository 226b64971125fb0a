"""A trained model scored into its run's metrics: perplexity records (posbench/evaluation/perplexity.py)
for a language model, accuracy records (posbench/evaluation/task_scores.py) for a task run, and the
attention diagnostics; each kind merged into what the run already has (posbench/evaluation/plan.py)."""

from __future__ import annotations

import logging

import numpy as np
import torch

from posbench.attention.options import AttentionOptions
from posbench.evaluation.diagnostics import attention_stats
from posbench.evaluation.perplexity import (
    evaluate_model,
    token_sets_of,
    warn_small_token_sets,
)
from posbench.evaluation.plan import RECORDS, attention_plan, merge, record_key
from posbench.evaluation.scored_text import in_bytes, scored_validation
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.task_scores import eval_batches, evaluate_task
from posbench.evaluation.windows import first_scored
from posbench.model.transformer import LanguageModel

log = logging.getLogger("posbench")


# -- loading a run ------------------------------------------------------------------------------


def evaluate_into(metrics: dict, model: LanguageModel, cfg, eval_cfg: EvalConfig, corpus, device: torch.device,
                  progress: bool = True, only_missing: bool = False, tracker=None,
                  kernel: str = "auto", show: bool = True) -> tuple[int, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Score a trained model of run config ``cfg`` at the settings of ``eval_cfg`` and merge the
    records into ``metrics``: perplexity (``evaluations``) for a language model, accuracy
    (``task_evaluations``) for a task run, and with ``eval.attention_stats`` the attention
    diagnostics (``attention``). ``only_missing``: only what ``metrics`` does not have yet.
    ``cfg``: the run's RunSpec; ``kernel``: the attention kernel (Runtime.attention); ``show``: log
    the scores (posbench-eval prints its table on stdout instead). Returns (records made,
    per-position curves to write)."""
    task, tag, options = cfg.task.build(), cfg.extend.tag(cfg.train_len), AttentionOptions(kernel=kernel)
    have = {kind: {record_key(kind, r) for r in metrics.get(field) or []} if only_missing else set()
            for kind, field in RECORDS.items()}
    kind = task.record_kind
    eval_cfg = in_bytes(eval_cfg, cfg.train_len, corpus.fingerprint)  # a subword tokenizer's scored text, in bytes
    val, segments = scored_validation(corpus, eval_cfg, cfg.train_len, cfg.data.doc_separator)
    token_losses: dict[str, np.ndarray] = {}
    if segments is not None:  # language modelling on a subword tokenizer (the tasks need bytes: refused before)
        records, per_pos = evaluate_model(model, val, cfg.train_len, eval_cfg, device, progress, cfg.data.doc_separator,
                                          corpus.fingerprint["hash"], have[kind], tag, options, segments, token_losses)
    elif kind == "perplexity":
        records, per_pos = evaluate_model(model, corpus.val, cfg.train_len, eval_cfg, device, progress,
                                          cfg.data.doc_separator, corpus.fingerprint["hash"], have[kind], tag, options,
                                          token_losses=token_losses)
    else:
        records = evaluate_task(model, task, corpus.val, eval_cfg, device, corpus.fingerprint["hash"], progress,
                                have[kind], tag, options)
        per_pos = {}
    metrics[RECORDS[kind]] = merge(kind, metrics.get(RECORDS[kind], []), records)
    if kind == "perplexity" and records:  # which documents each token set scores, for the report's bootstrap
        sets = token_sets_of(val, eval_cfg, cfg.train_len, cfg.data.doc_separator, corpus.fingerprint["hash"], segments)
        metrics["token_sets"] = {**metrics.get("token_sets", {}), **sets}
        if eval_cfg.scored_tokens is None:  # as many as the documents give (a number asked for is not news)
            warn_small_token_sets(sets)
    if tracker is not None:
        tracker.log_records(kind, records)
    if kind == "perplexity" and show:
        log_records(records)
    elif show:
        log_task_records(records, task.metric)
    made = len(records)
    todo = [p.length for p in attention_plan(model.encoding, eval_cfg, cfg.train_len) if p.key not in have["attention"]]
    if todo:
        stats = attention_records(model, task, val, cfg.train_len, eval_cfg, device, todo, options)
        metrics["attention"] = merge("attention", metrics.get("attention", []), stats)
        made += len(stats)
    return made, per_pos, token_losses


def attention_records(model: LanguageModel, task, val_tokens: np.ndarray, train_len: int, eval_cfg, device,
                      lengths: list[int], options: AttentionOptions = AttentionOptions()) -> list[dict]:
    """posbench.evaluation.diagnostics.attention_stats at ``lengths`` (the plan's), for the trained encoding:
    over ``eval.attention_examples`` windows of the validation text from the first scored token
    (a task run: that many evaluation examples of its middle condition)."""
    out = []
    for L in lengths:
        x = attention_inputs(task, L, eval_cfg.attention_examples, val_tokens, eval_cfg, train_len)
        for r in attention_stats(model, [x], device, options=options):
            out.append({"length": L, "multiple": L / train_len, **r, "source": task.source})
    return out


def attention_inputs(task, length: int, n: int, val_tokens: np.ndarray, eval_cfg, train_len: int) -> torch.Tensor:
    """[n, length] inputs for the attention diagnostics: consecutive windows of the validation text
    from the first scored token (language modelling), or examples of a task's middle condition."""
    if task.record_kind == "perplexity":
        stream = torch.from_numpy(np.asarray(val_tokens).astype(np.int64))
        start = min(first_scored(eval_cfg, train_len), len(stream) - length)
        ends = [e for e in range(start + length, len(stream), length)][:n]
        return stream[torch.as_tensor(ends)[:, None] + torch.arange(-length, 0)]
    conditions = task.conditions()
    mid = len(conditions) // 2
    return eval_batches(task, length, conditions[mid], mid, val_tokens)[0].x[:n]


def log_task_records(records: list[dict], metric: str) -> None:
    """One log line per variant: the task's metric (``exact`` or ``token_accuracy``, what the report
    calls accuracy) at each multiple, mean over the grid's conditions."""
    for variant in dict.fromkeys(r["variant"] for r in records):
        cells: dict[float, list[float]] = {}
        for r in records:
            if r["variant"] == variant and r[metric] is not None:
                cells.setdefault(r["multiple"], []).append(r[metric])
        shown = ", ".join(f"{m:g}x={sum(v) / len(v):.2f}" for m, v in cells.items())
        log.info("%s %s %s: %s", variant, records[0]["task"], metric.replace("_", " "), shown)


def log_records(records: list[dict]) -> None:
    """One log line per variant: its perplexity at each multiple."""
    for variant in dict.fromkeys(r["variant"] for r in records):
        for protocol in dict.fromkeys(r["protocol"] for r in records):
            rs = [r for r in records if r["variant"] == variant and r["protocol"] == protocol]
            shown = ", ".join(f"{r['multiple']:g}x={r['ppl']:.2f}" if r["ppl"] else f"{r['multiple']:g}x=n/d" for r in rs)
            log.info("%s %s ppl: %s", variant, protocol, shown)
