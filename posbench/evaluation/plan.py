"""The evaluation plan: which records a run's settings and corpus call for, one function per kind.

The same plan drives "what does this run still miss?" (posbench.jobs.train skips a complete run, or
evaluates only what it lacks) and the scoring itself (posbench.evaluation.evaluate, posbench.evaluation.task_scores,
the attention diagnostics), so the two can never disagree about what a setting asks for.

Every planned record has a ``key``, the same tuple that identifies a stored record of its kind
(``record_key``), so "missing" is a set difference and a merge replaces records of equal key.

    perplexity  (row, protocol, length, token set)   metrics["evaluations"]
    task        (row, length, condition, example set) metrics["task_evaluations"]
    attention   (length,)                             metrics["attention"]
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from posbench.evaluation.resolved import ResolvedEval
from posbench.evaluation.variants import Row, rows
from posbench.store.identity import task_settings
from posbench.tasks.base import Task

# where each kind of record lives in metrics.json
RECORDS = {"perplexity": "evaluations", "task": "task_evaluations", "attention": "attention"}


@dataclass(frozen=True)
class Planned:
    kind: str  # perplexity | task | attention
    length: int
    key: tuple
    row: Row | None = None
    protocol: str | None = None
    condition: Any = None


def example_set(task: Task, corpus_hash: str) -> str:
    """Names the evaluation examples: the task, its settings (posbench.store.identity.task_settings, as the run id
    sees them) and the corpus its filler comes from."""
    settings = json.dumps(task_settings(dataclasses.asdict(task.params)), sort_keys=True)
    return f"{task.name}:{hashlib.sha1((settings + corpus_hash).encode()).hexdigest()[:10]}"


def record_key(kind: str, r: dict) -> tuple:
    """The identity of a stored record of ``kind`` (what a new record with the same key replaces)."""
    if kind == "perplexity":
        return r["variant"], r["protocol"], r["length"], r.get("token_set") or ""
    if kind == "task":
        return r["variant"], r["length"], r.get("condition"), r["example_set"]
    return (r["length"],)


def merge(kind: str, old: list[dict], new: list[dict]) -> list[dict]:
    """One merge for every kind: new records replace old ones of the same key; records of other
    keys (other token or example sets, other lengths) stay beside them."""
    fresh = {record_key(kind, r) for r in new}
    kept = [r for r in old if record_key(kind, r) not in fresh] + new
    if kind != "perplexity":  # task and attention records stay in the order they were made
        return kept
    return sorted(kept, key=lambda r: tuple("" if x is None else x for x in record_key(kind, r)))


def perplexity_plan(encoding, ev: ResolvedEval) -> list[Planned]:
    """Rows x lengths x protocols, each on its protocol's token set."""
    sets = ev.token_sets()
    return [Planned("perplexity", L, (row.name, p, L, sets[p]), row, protocol=p)
            for row in rows(encoding, ev.settings, ev.tag) for L in ev.lengths for p in ev.protocols]


def task_plan(encoding, ev: ResolvedEval) -> list[Planned]:
    """Rows x lengths x the task's (``ev.task``) conditions, on the task's example set."""
    eset = example_set(ev.task, ev.corpus_hash)
    return [Planned("task", L, (row.name, L, c, eset), row, condition=c)
            for row in rows(encoding, ev.settings, ev.tag) for L in ev.lengths for c in ev.task.conditions()]


def attention_plan(encoding, ev: ResolvedEval) -> list[Planned]:
    """With ``eval.attention_stats``: every length the encoding is defined at (its plain row; the
    relative encodings compute their own scores, which the recorder does not see)."""
    if not ev.settings.attention_stats or encoding.uses_relative:
        return []
    return [Planned("attention", L, (L,)) for L in ev.lengths if encoding.undefined_reason(L) is None]


def evaluation_plan(encoding, ev: ResolvedEval) -> list[Planned]:
    """Every record the settings call for: the task's (perplexity for language modelling, accuracy
    for a synthetic task: ``Task.record_kind``) and the attention diagnostics."""
    own = perplexity_plan(encoding, ev) if ev.record_kind == "perplexity" else task_plan(encoding, ev)
    return own + attention_plan(encoding, ev)


def missing(plan: list[Planned], metrics: dict) -> list[Planned]:
    """The planned records ``metrics`` does not hold yet."""
    have = {kind: {record_key(kind, r) for r in metrics.get(field) or []} for kind, field in RECORDS.items()}
    return [p for p in plan if p.key not in have[p.kind]]


def _shown_set(name: str) -> str:
    """A token set's name without its corpus hash (the corpus is the run's own: check_same_corpus)."""
    return name.split(":", 1)[1] if ":" in name and not name.startswith("segments") else name


def why_new(todo: list[Planned], metrics: dict, train_len: int) -> str:
    """Why the records ``todo`` are not among the run's (``missing``), in words, each cause with its
    count: "new token set for nonoverlapping (segments[512, ...]; the run's: segments[256, ...]): 12",
    "new protocol sliding: 6", "new variant rope+yarn: 6", "new multiple 32x: 2". A record is counted
    once, under the first cause that holds in that order: a new protocol or token set makes every
    length and row of it new, so naming those too would only repeat it."""
    kinds = {kind: metrics.get(field) or [] for kind, field in RECORDS.items()}
    runs = kinds["perplexity"]
    protocols = {r["protocol"] for r in runs}
    sets = {p: {r.get("token_set") or "" for r in runs if r["protocol"] == p} for p in protocols}
    variants = {r["variant"] for r in runs} | {r["variant"] for r in kinds["task"]}
    lengths = {r["length"] for r in runs} | {r["length"] for r in kinds["task"]}
    examples = {r["example_set"] for r in kinds["task"]}
    causes: dict[str, int] = {}
    for p in todo:
        if p.kind == "perplexity":
            variant, protocol, length, tset = p.key
            if protocol not in protocols:
                cause = f"new protocol {protocol}"
            elif tset not in sets[protocol]:
                had = ", ".join(sorted(_shown_set(s) or "unnamed" for s in sets[protocol]))
                cause = f"new token set for {protocol} ({_shown_set(tset)}; the run's: {had})"
            elif variant not in variants:
                cause = f"new variant {variant}"
            elif length not in lengths:
                cause = f"new multiple {length / train_len:g}x"
            else:
                cause = "not scored before"
        elif p.kind == "task":
            name, length, _, eset = p.key
            cause = ("new example set" if kinds["task"] and eset not in examples else f"new variant {name}"
                     if name not in variants else f"new multiple {length / train_len:g}x" if length not in lengths
                     else "new condition")
        else:
            cause = "attention statistics not recorded at that length"
        causes[cause] = causes.get(cause, 0) + 1
    return "; ".join(f"{cause}: {n}" for cause, n in causes.items())
