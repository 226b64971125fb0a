"""A trained model scored into its run's metrics: perplexity records (posbench/evaluation/perplexity.py)
for a language model, accuracy records (posbench/evaluation/task_scores.py) for a task run, and the
attention diagnostics; each kind merged into what the run already has (posbench/evaluation/plan.py)."""

from __future__ import annotations

import logging

import numpy as np
import torch

from posbench.evaluation.diagnostics import attention_stats
from posbench.evaluation.perplexity import (
    evaluate_model,
    token_sets_of,
    warn_small_token_sets,
)
from posbench.evaluation.plan import RECORDS, attention_plan, merge, record_key
from posbench.evaluation.resolved import ResolvedEval
from posbench.evaluation.task_scores import eval_batches, evaluate_task
from posbench.model.transformer import LanguageModel

log = logging.getLogger("posbench")


def evaluate_into(metrics: dict, model: LanguageModel, ev: ResolvedEval, device: torch.device, progress: bool = True,
                  only_missing: bool = False, tracker=None, show: bool = True,
                  ) -> tuple[int, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Score a trained model as the resolved evaluation ``ev`` says (posbench/evaluation/resolved.py:
    the run's settings, task, extension tag and kernel, with its scored text: with_scored_text) and
    merge the records into ``metrics``: perplexity (``evaluations``) for a language model, accuracy
    (``task_evaluations``) for a task run, and with ``eval.attention_stats`` the attention
    diagnostics (``attention``). ``only_missing``: only what ``metrics`` does not have yet.
    ``show``: log the scores (posbench-eval prints its table on stdout instead). Returns (records
    made, per-position curves to write, per-token losses to write)."""
    have = {kind: {record_key(kind, r) for r in metrics.get(field) or []} if only_missing else set()
            for kind, field in RECORDS.items()}
    kind, token_losses = ev.record_kind, {}
    if kind == "perplexity":  # bytes, or a subword tokenizer's scored text (the tasks need bytes: refused before)
        records, per_pos = evaluate_model(model, ev, device, progress, have[kind], token_losses)
    else:
        records, per_pos = evaluate_task(model, ev, device, progress, have[kind]), {}
    metrics[RECORDS[kind]] = merge(kind, metrics.get(RECORDS[kind], []), records)
    if kind == "perplexity" and records:  # which documents each token set scores, for the report's bootstrap
        sets = token_sets_of(ev)
        metrics["token_sets"] = {**metrics.get("token_sets", {}), **sets}
        if ev.settings.scored_tokens is None:  # as many as the documents give (a number asked for is not news)
            warn_small_token_sets(sets)
    if tracker is not None:
        tracker.log_records(kind, records)
    if kind == "perplexity" and show:
        log_records(records)
    elif show:
        log_task_records(records, ev.task.metric)
    made = len(records)
    todo = [p.length for p in attention_plan(model.encoding, ev) if p.key not in have["attention"]]
    if todo:
        stats = attention_records(model, ev, device, todo)
        metrics["attention"] = merge("attention", metrics.get("attention", []), stats)
        made += len(stats)
    return made, per_pos, token_losses


def attention_records(model: LanguageModel, ev: ResolvedEval, device, lengths: list[int]) -> list[dict]:
    """posbench.evaluation.diagnostics.attention_stats at ``lengths`` (the plan's), for the trained encoding:
    over ``eval.attention_examples`` windows of the validation text from the first scored token
    (a task run: that many evaluation examples of its middle condition)."""
    out = []
    for L in lengths:
        x = attention_inputs(ev, L, ev.settings.attention_examples)
        for r in attention_stats(model, [x], device, options=ev.options):
            out.append({"length": L, "multiple": L / ev.train_len, **r, "source": ev.task.source})
    return out


def attention_inputs(ev: ResolvedEval, length: int, n: int) -> torch.Tensor:
    """[n, length] inputs for the attention diagnostics: consecutive windows of the validation text
    (``ev.text``) from the first scored token (language modelling), or examples of the task's middle
    condition."""
    if ev.record_kind == "perplexity":
        stream = torch.from_numpy(np.asarray(ev.tokens()).astype(np.int64))
        start = min(ev.first_scored, len(stream) - length)
        ends = [e for e in range(start + length, len(stream), length)][:n]
        return stream[torch.as_tensor(ends)[:, None] + torch.arange(-length, 0)]
    conditions = ev.task.conditions()
    mid = len(conditions) // 2
    return eval_batches(ev.task, length, conditions[mid], mid, ev.tokens())[0].x[:n]


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
