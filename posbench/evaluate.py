"""Perplexity at many lengths: the heart of the benchmark.

Each protocol of ``eval.protocols`` (``nonoverlapping``, ``sliding``, ``press_sliding``,
``fixed_target``; see posbench/protocols.py) is a plan of windows and of the final positions
scored in each; every length of a protocol scores the same tokens, so its numbers differ only by
how much context (and which positions) the model is given. One routine, ``score_plans``, runs the
plans of one row and length together: a window two protocols share (every other L/2-sliding window
is a non-overlapping one) is run once.

Reported per protocol and length: mean loss in nats per token, perplexity exp(loss), bits per byte
(the summed loss / (ln 2 x the bytes scored): loss / ln 2 when tokens are bytes; with a subword
tokenizer the one number comparable across tokenizers), the bytes scored and the mean bytes in a
window of that length (``length_bytes``), the summed loss of each validation document scored (``doc_nats``, in the order of the
token set's documents, ``metrics["token_sets"]``: what the report bootstraps over), and the mean
loss at each position within the window. A length the encoding cannot represent (a learned table
past its size) gets ``null`` with the reason.

Stand-alone use on a finished run, e.g. with longer lengths::

    posbench-eval run_dir=runs/<run_id> eval.multiples=[1,2,4,8,16,32]
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from posbench import extend as extension
from posbench.data import DOC_SEPARATOR, check_same_corpus, load_corpus
from posbench.device import Runtime, autocast, resolve_device
from posbench.diagnostics import attention_stats
from posbench.errors import PosbenchError
from posbench.hydra_state import launch_command
from posbench.model import LanguageModel
from posbench.protocols import PROTOCOLS, EvalConfig, Segments, WindowPlan, _Stream, check_fits, eval_lengths
from posbench.results import (
    CONFIG,
    check_writable_dir,
    load_checkpoint,
    per_position_key,
    METRICS,
    load_metrics,
    read_run_config,
    run_lock,
    write_metrics,
    write_per_position,
)
from posbench.progress import progress as progress_bar
from posbench.plan import RECORDS, attention_plan, evaluation_plan, merge, missing, perplexity_plan, record_key
from posbench.records_table import records_table
from posbench.tokens import in_bytes
from posbench.variants import Row
from posbench.variants.base import AttentionOptions

log = logging.getLogger("posbench")


@dataclass(frozen=True)
class EvalRequest:
    """posbench-eval: score the run in ``run_dir`` with the evaluation settings ``eval``."""

    eval: EvalConfig
    run_dir: Optional[str]
    runtime: Runtime

    def check(self) -> None:
        """What posbench-train would refuse in ``eval`` for this run is refused here too: the same
        checks (RunSpec.check_evaluation), against the run's own settings."""
        self.run_spec()
        completed_metrics(Path(self.run_dir).expanduser())  # before the lock: a refusal leaves nothing behind
        self.runtime.check()
        check_writable_dir(self.run_dir, "run_dir")

    def run_spec(self):
        """The run's own spec (from its saved config.yaml), with this request's evaluation settings."""
        from posbench.spec import RunSpec

        if self.run_dir is None:
            raise PosbenchError("give the run to evaluate: posbench-eval run_dir=runs/<run_id>")
        run_dir = Path(self.run_dir).expanduser()
        if not (run_dir / CONFIG).is_file():
            raise PosbenchError(f"run_dir={self.run_dir} is not a run directory (no {CONFIG}); give a folder that "
                                "posbench-train made, e.g. runs/<run_id>")
        try:
            spec = RunSpec.from_config(read_run_config(run_dir))
        except (ValueError, PosbenchError) as e:  # unreadable YAML, no train_len, a plug-in not installed here
            raise PosbenchError(f"{run_dir / CONFIG} is not a usable posbench run config ({e})") from None
        spec = spec.with_eval(self.eval)
        spec.check_evaluation()
        return spec


@dataclass
class Scores:
    """What one plan's windows scored: summed loss and count at each window position, and the
    summed loss of each document (``docs``, ascending) of the token set."""

    pos_sum: np.ndarray
    pos_count: np.ndarray
    doc_nats: np.ndarray
    docs: np.ndarray
    doc_tokens: np.ndarray


def token_set_documents(plan: WindowPlan) -> tuple[np.ndarray, np.ndarray]:
    """(documents, scored tokens of each) of a plan's token set, documents ascending."""
    unit_tokens = np.bincount(plan.units, weights=plan.scored, minlength=len(plan.unit_docs))
    docs, inverse = np.unique(plan.unit_docs, return_inverse=True)
    return docs, np.bincount(inverse, weights=unit_tokens, minlength=len(docs)).astype(np.int64)


@torch.inference_mode()
def evaluate_model(
    model: LanguageModel,
    val_tokens: np.ndarray,
    train_len: int,
    eval_cfg,
    device: torch.device,
    progress: bool = True,
    doc_separator: str = DOC_SEPARATOR,
    corpus_hash: str = "",
    skip: set | None = None,
    tag: str = "",
    options: AttentionOptions = AttentionOptions(),
    segments: Segments | None = None,
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Records (one per variant x protocol x length) and per-position mean losses (key
    ``<variant>/<protocol>/L<length>``, NaN where a protocol scores no token) for one model.
    Rows are the model's own and its evaluation-time variants' (posbench.variants.rows: plain, and e.g. RoPE with YaRN), all
    from the same weights. Every record names its ``token_set`` (protocols.token_set); ``skip``
    holds record keys (``record_key``) already evaluated, which are not computed again; ``tag``:
    an extension run's (its rows' names carry it); ``options``: the trained forward's (the kernel);
    ``segments``: a subword tokenizer's scored segments, chosen in bytes (posbench/tokens.py
    scored_stream, which also gives ``val_tokens``); None: the protocols find them in the bytes."""
    model.eval()
    enc = model.encoding
    lengths = eval_lengths(train_len, eval_cfg.multiples)
    protocols = list(eval_cfg.protocols)
    if segments is None:
        check_fits(val_tokens, eval_cfg, train_len, doc_separator)
    n_val = len(val_tokens)
    handlers = {p: PROTOCOLS.get(p)() for p in protocols}
    sets = {p: h.token_set(eval_cfg, train_len, n_val, corpus_hash) for p, h in handlers.items()}
    contexts = {p: segments if segments is not None and isinstance(h, _Stream)
                else h.prepare(val_tokens, eval_cfg, train_len, doc_separator) for p, h in handlers.items()}
    plans = {(p, L): handlers[p].plan(L, eval_cfg, train_len, n_val, contexts[p]) for p in protocols for L in lengths}
    stream = torch.from_numpy(np.asarray(val_tokens).astype(np.int64))
    todo = [c for c in perplexity_plan(enc, eval_cfg, train_len, n_val, corpus_hash, tag) if c.key not in (skip or set())]
    groups: dict[tuple, list] = {}  # the cells of one row and length run their windows together
    for c in todo:
        groups.setdefault((c.row.name, c.length), []).append(c)
    records, per_position = [], {}
    total = sum(len(np.unique(np.concatenate([plans[c.protocol, c.length].ends for c in cells]))) * cells[0].length
                for cells in groups.values())
    bar = progress_bar(total=total, unit="tok", desc="eval", enabled=progress)
    try:
        for cells in groups.values():
            row, L = cells[0].row, cells[0].length
            bar.set_description(f"eval {row.name} L={L}")
            bases = [{"variant": row.name, "protocol": c.protocol, "length": L, "multiple": L / train_len,
                      "token_set": sets[c.protocol], "min_context": plans[c.protocol, L].min_context,
                      "row": row.record()} for c in cells]
            if (reason := row.undefined_reason(enc, L)) is not None:
                bar.update(len(np.unique(np.concatenate([plans[c.protocol, L].ends for c in cells]))) * L)
                records += [{**base, "tokens_scored": 0, "bytes_scored": 0, "loss": None, "ppl": None, "bpb": None,
                             "length_bytes": None, "reason": reason} for base in bases]
                continue
            scores = score_plans(model, stream, [plans[c.protocol, L] for c in cells], L, eval_cfg.batch_tokens,
                                 device, bar, row, row.options(options, L, train_len))
            for base, c, sc in zip(bases, cells, scores):
                mean = float(sc.pos_sum.sum() / sc.pos_count.sum())
                n_tokens = plans[c.protocol, L].tokens_scored
                n_bytes = contexts[c.protocol].bytes if isinstance(contexts[c.protocol], Segments) else n_tokens
                # bits per byte = summed nats / (ln 2 x bytes scored); for bytes n_tokens / n_bytes is exactly 1
                records.append({**base, "tokens_scored": n_tokens, "bytes_scored": n_bytes, "loss": mean,
                                "ppl": math.exp(mean), "bpb": mean / math.log(2) * (n_tokens / n_bytes),
                                "length_bytes": round(L * n_bytes / n_tokens, 1), "reason": None,
                                "doc_nats": [round(float(x), 4) for x in sc.doc_nats]})
                with np.errstate(invalid="ignore", divide="ignore"):
                    per_position[per_position_key(row.name, c.protocol, L)] = (sc.pos_sum / sc.pos_count).astype(np.float32)
    finally:
        bar.close()
    return records, per_position


def token_sets_of(val_tokens: np.ndarray, eval_cfg, train_len: int, doc_separator: str = DOC_SEPARATOR,
                  corpus_hash: str = "", segments: Segments | None = None) -> dict[str, dict]:
    """Each protocol's token set: the validation documents it scores, the tokens scored in each
    (the weights of the report's bootstrap over documents), and the documents in the split
    (``segments``: as for evaluate_model)."""
    from posbench.protocols import documents

    out, n_val = {}, len(val_tokens)
    n_docs = segments.n_docs if segments is not None else len(documents(np.asarray(val_tokens), doc_separator.encode())[0])
    for p in eval_cfg.protocols:
        h = PROTOCOLS.get(p)()
        context = segments if segments is not None and isinstance(h, _Stream) else \
            h.prepare(val_tokens, eval_cfg, train_len, doc_separator)
        plan = h.plan(train_len, eval_cfg, train_len, n_val, context)
        docs, tokens = token_set_documents(plan)
        entry = {"docs": docs.tolist(), "doc_tokens": tokens.tolist(), "tokens": int(tokens.sum()),
                 "documents_in_split": n_docs}
        if segments is not None:  # the same bytes under every tokenizer: their count says so
            entry["bytes"] = segments.bytes
        out[h.token_set(eval_cfg, train_len, n_val, corpus_hash)] = entry
    return out


def score_plans(model, stream: torch.Tensor, plans: list[WindowPlan], L: int, batch_tokens: int, device, bar,
                row: Row | None = None, options: AttentionOptions | None = None) -> list[Scores]:
    """Run the windows of several plans at length L, each distinct window once (two protocols
    often share windows): per plan, (summed loss, count) at each position of the window, counting
    only the scored (final) positions of each of its windows, and the summed loss of each document,
    as ``row`` asks (its forward ``options``; explicit positions per batch of windows for
    +randpos, as Ruoss et al. 2023's code samples them at evaluation too, reproducible from
    (L, batch))."""
    ends = np.unique(np.concatenate([p.ends for p in plans]))
    where = [np.searchsorted(ends, p.ends) for p in plans]  # each plan's windows among the distinct ones (sorted)
    offsets = torch.arange(-L, 0)
    pos_sum = [torch.zeros(L, dtype=torch.float64) for _ in plans]
    pos_count = [torch.zeros(L, dtype=torch.float64) for _ in plans]
    window_nats = [np.zeros(len(p.ends)) for p in plans]
    batch = max(1, batch_tokens // L)
    positions = torch.arange(L, device=device)
    all_ends = torch.as_tensor(ends, dtype=torch.int64)
    for s in range(0, len(ends), batch):
        idx = all_ends[s : s + batch, None] + offsets  # input indices [b, L]; targets are one further
        x, y = stream[idx].to(device), stream[idx + 1].to(device)
        sampled = row.positions(L, model.encoding.shape.max_position, s) if row is not None else None
        with autocast(device):
            logits = model(x, positions if sampled is None else sampled.to(device), options)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten(), reduction="none").view_as(y).double().cpu()
        for k, plan in enumerate(plans):
            lo, hi = np.searchsorted(where[k], [s, s + len(idx)])  # this plan's windows in the batch
            if lo == hi:
                continue
            rows_ = torch.as_tensor(where[k][lo:hi] - s)
            scored = torch.as_tensor(plan.scored[lo:hi], dtype=torch.int64)
            mask = torch.arange(L)[None, :] >= (L - scored[:, None])  # the scored final positions
            masked = loss[rows_].masked_fill(~mask, 0)
            pos_sum[k] += masked.sum(0)
            pos_count[k] += mask.sum(0).double()
            window_nats[k][lo:hi] = masked.sum(1).numpy()
        bar.update(x.numel())
    out = []
    for k, plan in enumerate(plans):
        docs, tokens = token_set_documents(plan)
        unit_nats = np.bincount(plan.units, weights=window_nats[k], minlength=len(plan.unit_docs))
        doc_nats = np.bincount(np.searchsorted(docs, plan.unit_docs), weights=unit_nats, minlength=len(docs))
        out.append(Scores(pos_sum[k].numpy(), pos_count[k].numpy(), doc_nats, docs, tokens))
    return out


# -- during training ---------------------------------------------------------------------------

PROBE_FIELDS = ("variant", "protocol", "length", "multiple", "token_set", "loss", "ppl")


def probe_settings(eval_cfg: EvalConfig) -> EvalConfig:
    """What a during-training evaluation scores: the plain encoding at 1x and at the longest
    multiple, nonoverlapping, on the final evaluation's tokens (so its last point is the table's)."""
    return replace(eval_cfg, multiples=sorted({1, max(eval_cfg.multiples)}), protocols=["nonoverlapping"],
                   rope_scaling=[], bca=[], temperature=[], variants=[])


def probe_steps(fractions, steps: int) -> list[int]:
    """The training steps (1-based) of ``eval.during_training``'s fractions of the budget."""
    return sorted({min(steps, max(1, round(f * steps))) for f in fractions})


def during_training_probe(val_tokens: np.ndarray, train_len: int, eval_cfg, device: torch.device,
                          doc_separator: str = DOC_SEPARATOR, corpus_hash: str = "", kernel: str = "auto",
                          segments: Segments | None = None):
    """A callable for trainer.train_model's ``probe``: the records of ``probe_settings``
    (``segments``: as for evaluate_model)."""
    cfg = probe_settings(eval_cfg)

    def probe(model: LanguageModel) -> list[dict]:
        records, _ = evaluate_model(model, val_tokens, train_len, cfg, device, progress=False,
                                    doc_separator=doc_separator, corpus_hash=corpus_hash,
                                    options=AttentionOptions(kernel=kernel), segments=segments)
        return [{k: r[k] for k in PROBE_FIELDS} for r in records]

    return probe


# -- loading a run ------------------------------------------------------------------------------


def model_from_checkpoint(ckpt: dict, device: torch.device):
    """(the trained model of a checkpoint (results.load_checkpoint), the run's RunSpec); one-line
    error if it does not fit."""
    from posbench.spec import RunSpec

    try:
        cfg = RunSpec.from_config(ckpt["config"])
        model = LanguageModel(cfg.model, cfg.encoding.build(cfg.shape))
        model.load_state_dict(ckpt["model"])
        extension.apply(model, cfg)  # an extension run's method and row names (nothing for others)
    except PosbenchError:
        raise
    except Exception as e:  # noqa: BLE001 - keys or shapes of another model, a config without a field
        raise PosbenchError(f"checkpoint does not match its own config ({type(e).__name__}: "
                            f"{str(e).splitlines()[0][:160]}); train the run again") from None
    return model.to(device), cfg


def evaluate_into(metrics: dict, model: LanguageModel, cfg, eval_cfg: EvalConfig, corpus, device: torch.device,
                  progress: bool = True, only_missing: bool = False, tracker=None,
                  kernel: str = "auto", show: bool = True) -> tuple[int, dict[str, np.ndarray]]:
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
    if segments is not None:  # language modelling on a subword tokenizer (the tasks need bytes: refused before)
        records, per_pos = evaluate_model(model, val, cfg.train_len, eval_cfg, device, progress, cfg.data.doc_separator,
                                          corpus.fingerprint["hash"], have[kind], tag, options, segments)
    else:
        records, per_pos = task.score(model, corpus.val, cfg.train_len, eval_cfg, device,
                                      corpus_hash=corpus.fingerprint["hash"], doc_separator=cfg.data.doc_separator,
                                      skip=have[kind], tag=tag, options=options, progress=progress)
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
    return made, per_pos


def scored_validation(corpus, eval_cfg, train_len: int, separator: str) -> tuple[np.ndarray, Segments | None]:
    """(the validation tokens to score, the scored segments): the corpus's own tokens and None for
    bytes (the protocols find the segments); for a subword tokenizer, the segments chosen in bytes
    and the tokens aligned to them (posbench/tokens.py)."""
    if corpus.is_bytes:
        return corpus.val, None
    from posbench.tokens import scored_stream

    return scored_stream(corpus, eval_cfg, train_len, separator)


SMALL_TOKEN_SET = 10_000  # below this, chance moves a perplexity by about a percent or more


def warn_small_token_sets(sets: dict[str, dict]) -> None:
    """One line when a token set scores few tokens at each length (a small local corpus): its
    perplexities are noisy, and ratios between lengths a percent apart may be chance."""
    fewest = min(sets.values(), key=lambda s: s["tokens"], default=None)
    if fewest is not None and fewest["tokens"] < SMALL_TOKEN_SET:
        log.warning("small validation set: %s tokens scored at each length (in %d documents), fewer than %s; "
                    "differences of about a percent may be chance (a larger corpus or data.val_fraction scores more)",
                    f"{fewest['tokens']:,}", len(fewest["docs"]), f"{SMALL_TOKEN_SET:,}")


def attention_records(model: LanguageModel, task, val_tokens: np.ndarray, train_len: int, eval_cfg, device,
                      lengths: list[int], options: AttentionOptions = AttentionOptions()) -> list[dict]:
    """posbench.diagnostics.attention_stats at ``lengths`` (the plan's), for the trained encoding:
    over ``eval.attention_examples`` windows of the validation text from the first scored token
    (a task run: that many evaluation examples of its middle condition)."""
    out = []
    for L in lengths:
        x = task.attention_inputs(L, eval_cfg.attention_examples, val_tokens, eval_cfg, train_len)
        for r in attention_stats(model, [x], device, options=options):
            out.append({"length": L, "multiple": L / train_len, **r, "source": task.source})
    return out


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


def completed_metrics(run_dir: Path) -> dict:
    """The metrics of a run that can be evaluated; a one-line PosbenchError for any other."""
    try:
        metrics = load_metrics(run_dir)
    except ValueError as e:
        raise PosbenchError(f"{run_dir / METRICS} is unreadable ({e}); posbench-train with the run's config trains "
                            "it again") from None
    if metrics is None:
        raise PosbenchError(f"{run_dir} has no {METRICS}: its training has not finished (posbench-train resumes it)")
    if metrics["status"] != "completed":
        raise PosbenchError(f"{run_dir} has status {metrics['status']!r}: only a completed run can be evaluated")
    return metrics


def evaluate_run(run_dir: Path, eval_cfg: EvalConfig, runtime: Runtime = Runtime(), progress: bool = True,
                 only_missing: bool = False, command: str | None = None, show: bool = True) -> tuple[dict, int]:
    """Evaluate a trained run at the settings of ``eval_cfg`` and merge the records into its files;
    with ``only_missing``, only the records it does not have yet. Returns (metrics, records made)."""
    run_dir = Path(run_dir)
    metrics = completed_metrics(run_dir)
    device = resolve_device(runtime.device)
    model, cfg = model_from_checkpoint(load_checkpoint(run_dir), device)
    corpus = load_corpus(cfg.data)
    check_same_corpus(run_dir, corpus)  # scored on the text it was trained on, or not at all
    cfg.with_eval(eval_cfg).check_corpus(corpus, evaluated=True)  # every window asked for fits, before anything is scored
    if only_missing:  # say what a re-run skips, so that a quick finish is not mistaken for a failure
        plan = asked_for(cfg.with_eval(eval_cfg), metrics)
        todo = len(missing(plan, metrics))
        log.info("%s: already have %d records; %s", run_dir.name, len(plan) - todo,
                 f"scoring {todo} new" if todo else "nothing new to score")
    made, per_pos = evaluate_into(metrics, model, cfg, eval_cfg, corpus, device, progress, only_missing,
                                  kernel=runtime.attention, show=show)
    if not made:
        return metrics, 0
    if command:
        metrics["commands"] = list(dict.fromkeys([*metrics.get("commands", []), command.replace(str(run_dir), "<run_dir>")]))
    if per_pos:
        write_per_position(run_dir, per_pos)
    write_metrics(run_dir, metrics)
    return metrics, made


def log_records(records: list[dict]) -> None:
    """One log line per variant: its perplexity at each multiple."""
    for variant in dict.fromkeys(r["variant"] for r in records):
        for protocol in dict.fromkeys(r["protocol"] for r in records):
            rs = [r for r in records if r["variant"] == variant and r["protocol"] == protocol]
            shown = ", ".join(f"{r['multiple']:g}x={r['ppl']:.2f}" if r["ppl"] else f"{r['multiple']:g}x=n/d" for r in rs)
            log.info("%s %s ppl: %s", variant, protocol, shown)


def asked_for(spec, metrics: dict) -> list:
    """The records a run's evaluation settings call for (``spec``: the run's RunSpec with them), on
    the corpus the run recorded: the plan posbench-train's skip decision reads too."""
    corpus = metrics.get("corpus") or {}
    return evaluation_plan(spec.encoding.build(spec.shape), spec.task.build(), in_bytes(spec.eval, spec.train_len, corpus),
                           spec.train_len,
                           corpus.get("val_tokens", 0), corpus.get("hash", ""), spec.extend.tag(spec.train_len))


def run(request: EvalRequest) -> None:
    """posbench-eval's job: score what the run does not have yet, merge the records into its files,
    and print the records asked for as one table on stdout (the scores are not logged as well). It
    holds the run's lock (waiting for another process working on the run), so that two evaluations
    of a run at once each add their records: the second reads the first's before it writes."""
    request.runtime.apply_threads()
    run_dir = Path(request.run_dir).expanduser()
    with run_lock(run_dir, wait=True):
        metrics, _ = evaluate_run(run_dir, request.eval, request.runtime, only_missing=True,
                                  command=launch_command("posbench-eval"), show=False)
    keys = {p.key for p in asked_for(request.run_spec(), metrics)}
    shown = {kind: [r for r in metrics.get(field) or [] if record_key(kind, r) in keys] for kind, field in RECORDS.items()}
    print(records_table(shown["perplexity"], shown["task"]), end="")


def main() -> None:
    """``posbench-eval`` (the console script; its command line is posbench/cli/'s)."""
    from posbench.cli.evaluate import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
