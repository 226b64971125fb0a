"""Perplexity at many lengths: the heart of the benchmark.

Each protocol of ``eval.protocols`` (``nonoverlapping``, ``sliding``, ``press_sliding``,
``fixed_target``, and the published ones; see posbench/evaluation/protocols/) is a plan of windows and
of the final positions scored in each (less any unscored last ones: WindowPlan.unscored_last); every
length of a protocol scores the same tokens (but YaRN's and LCEG's published rules), so its numbers
differ only by how much context (and which positions) the model is given. One routine, ``score_plans``, runs the
plans of one row and length together: a window two protocols share (every other L/2-sliding window
is a non-overlapping one) is run once.

Reported per protocol and length: mean loss in nats per token, perplexity exp(loss), bits per byte
(the summed loss / (ln 2 x the bytes scored): loss / ln 2 when tokens are bytes; with a subword
tokenizer the one number comparable across tokenizers), the bytes scored and the mean bytes in a
window of that length (``length_bytes``), the summed loss of each validation document scored (``doc_nats``, in the order of the
token set's documents, ``metrics["token_sets"]``: what the report bootstraps over), and the mean
loss at each position within the window. A length the encoding cannot represent (a learned table
past its size) gets ``null`` with the reason. A row scored beside its window control ``+swaL``, and
that control, also keep each scored token's loss (``evaluate_model``'s ``token_losses``, the run's
token_losses.npz): the report's key tokens (posbench/report/key_tokens/frames.py).

Stand-alone use on a finished run, e.g. with longer lengths::

    posbench-eval run_dir=runs/<run_id> eval.multiples=[1,2,4,8,16,32]
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from posbench.attention.options import AttentionOptions
from posbench.core.device import autocast
from posbench.core.progress import progress as progress_bar
from posbench.evaluation.plan import perplexity_plan
from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.protocols.base import StreamProtocol
from posbench.evaluation.resolved import ResolvedEval
from posbench.evaluation.scored_text import check_fits
from posbench.evaluation.variants import Row
from posbench.evaluation.variants.local import WINDOW_CONTROL
from posbench.evaluation.windows import Segments, WindowPlan, documents
from posbench.model.transformer import LanguageModel
from posbench.store.rundir import per_position_key, token_loss_keys

log = logging.getLogger("posbench")


@dataclass
class Scores:
    """What one plan's windows scored: summed loss and count at each window position, and the
    summed loss of each document (``docs``, ascending) of the token set."""

    pos_sum: np.ndarray
    pos_count: np.ndarray
    doc_nats: np.ndarray
    docs: np.ndarray
    doc_tokens: np.ndarray
    token_loss: np.ndarray | None = None  # [N] each scored token's loss in plan order (score_plans' per_token)


def token_layout(plan: WindowPlan, L: int) -> tuple[np.ndarray, np.ndarray]:
    """(document, position) of each scored token of a plan at length L, in the order score_plans
    lists them (window by window, positions ascending): the index of its document among the token
    set's documents (token_set_documents, ascending) and its position within the window (0 is the
    window's first input; a scored position p saw p earlier tokens)."""
    docs = np.unique(plan.unit_docs)
    window_doc = np.searchsorted(docs, plan.unit_docs[plan.units])
    scored = plan.scored.astype(np.int64)
    doc = np.repeat(window_doc, scored)
    # the k-th scored token of a window holding s of them sits at L - s + k (less its unscored_last)
    first = np.repeat(plan.scored_from(L), scored)
    k = np.arange(len(doc)) - np.repeat(np.cumsum(scored) - scored, scored)
    return doc.astype(np.int32), (first + k).astype(np.int32)


def token_set_documents(plan: WindowPlan) -> tuple[np.ndarray, np.ndarray]:
    """(documents, scored tokens of each) of a plan's token set, documents ascending."""
    unit_tokens = np.bincount(plan.units, weights=plan.scored, minlength=len(plan.unit_docs))
    docs, inverse = np.unique(plan.unit_docs, return_inverse=True)
    return docs, np.bincount(inverse, weights=unit_tokens, minlength=len(docs)).astype(np.int64)


@torch.inference_mode()
def evaluate_model(model: LanguageModel, ev: ResolvedEval, device: torch.device, progress: bool = True,
                   skip: set | None = None, token_losses: dict[str, np.ndarray] | None = None,
                   ) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Records (one per variant x protocol x length) and per-position mean losses (key
    ``<variant>/<protocol>/L<length>``, NaN where a protocol scores no token) for one model, on the
    text and at the settings of the resolved evaluation ``ev`` (posbench/evaluation/resolved.py: its
    ``text``, a subword tokenizer's ``segments`` chosen in bytes, or None: the protocols find them in
    the bytes; its ``tag``, an extension run's, which its rows' names carry; its ``options``, the
    trained forward's kernel). Rows are the model's own and its evaluation-time variants'
    (posbench.evaluation.variants.rows: plain, and e.g. RoPE with YaRN), all from the same weights.
    Every record names its ``token_set`` (protocols.token_set); ``skip`` holds record keys
    (``record_key``) already evaluated, which are not computed again. ``token_losses``: a dict to
    fill with each scored token's loss (float16) of every row that stands beside its window control
    ``+swaL`` (and of that control), with each token's document and window position
    (store/rundir.py ``token_loss_keys``): what the report's key tokens read
    (posbench/report/key_tokens/frames.py); None: not kept."""
    model.eval()
    enc, train_len, eval_cfg, text = model.encoding, ev.train_len, ev.settings, ev.tokens()
    if ev.segments is None:
        check_fits(ev)
    sets = ev.token_sets()
    contexts = protocol_contexts(ev)
    plans = {(p, L): PROTOCOLS.get(p)().plan(L, eval_cfg, train_len, ev.n_val, contexts[p])
             for p in ev.protocols for L in ev.lengths}
    stream = torch.from_numpy(np.asarray(text).astype(np.int64))
    planned = perplexity_plan(enc, ev)
    todo = [c for c in planned if c.key not in (skip or set())]
    groups: dict[tuple, list] = {}  # the cells of one row and length run their windows together
    for c in todo:
        groups.setdefault((c.row.name, c.length), []).append(c)
    records, per_position = [], {}
    paired = far_context_pairs({c.row.name for c in planned}) if token_losses is not None else set()
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
                records += [undefined_record(base, reason) for base in bases]
                continue
            keep = row.name in paired
            row.fit(model, ev, L, device)  # what a variant learns at L (HeadScale), on the training split
            if fitted := row.fit_record(L):  # what it chose there (+tuned's searched settings and their losses)
                bases = [{**base, "fit": fitted} for base in bases]
            scores = score_plans(model, stream, [plans[c.protocol, L] for c in cells], L, eval_cfg.batch_tokens,
                                 device, bar, row, row.options(ev.options, L, train_len), per_token=keep)
            for base, c, sc in zip(bases, cells, scores):
                records.append(scored_record(base, sc, plans[c.protocol, L], contexts[c.protocol], L))
                per_position[per_position_key(row.name, c.protocol, L)] = position_means(sc)
                if keep:
                    loss_key, doc_key, pos_key = token_loss_keys(row.name, c.protocol, L)
                    token_losses[loss_key] = sc.token_loss.astype(np.float16)
                    token_losses[doc_key], token_losses[pos_key] = token_layout(plans[c.protocol, L], L)
    finally:
        bar.close()
    return records, per_position


def undefined_record(base: dict, reason: str) -> dict:
    """The record of a row that cannot be scored at its length, with the reason."""
    return {**base, "tokens_scored": 0, "bytes_scored": 0, "loss": None, "ppl": None, "bpb": None,
            "length_bytes": None, "reason": reason}


def scored_record(base: dict, sc: Scores, plan: WindowPlan, context, L: int) -> dict:
    """The record of one plan's scores: mean loss, perplexity, bits per byte, bytes, per-document nats."""
    mean = float(sc.pos_sum.sum() / sc.pos_count.sum())
    n_tokens = plan.tokens_scored
    n_bytes = context.bytes if isinstance(context, Segments) else n_tokens
    # bits per byte = summed nats / (ln 2 x bytes scored); for bytes n_tokens / n_bytes is exactly 1
    return {**base, "tokens_scored": n_tokens, "bytes_scored": n_bytes, "loss": mean,
            "ppl": math.exp(mean), "bpb": mean / math.log(2) * (n_tokens / n_bytes),
            "length_bytes": round(L * n_bytes / n_tokens, 1), "reason": None,
            "doc_nats": [round(float(x), 4) for x in sc.doc_nats]}


def position_means(sc: Scores) -> np.ndarray:
    """Mean loss at each window position (NaN where nothing is scored): the per_position.npz curve."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sc.pos_sum / sc.pos_count).astype(np.float32)


def protocol_contexts(ev: ResolvedEval) -> dict:
    """protocol -> what its plans need from the scored text (its ``prepare``: the stream protocols'
    segments, fixed_target's document ends); a subword tokenizer's segments are ``ev.segments``."""
    out = {}
    for p in ev.protocols:
        h = PROTOCOLS.get(p)()
        out[p] = ev.segments if ev.segments is not None and isinstance(h, StreamProtocol) else \
            h.prepare(ev.tokens(), ev.settings, ev.train_len, ev.separator)
    return out


def token_sets_of(ev: ResolvedEval) -> dict[str, dict]:
    """Each protocol's token set: the validation documents it scores, the tokens scored in each
    (the weights of the report's bootstrap over documents), and the documents in the split."""
    out, segments, names, contexts = {}, ev.segments, ev.token_sets(), protocol_contexts(ev)
    n_docs = segments.n_docs if segments is not None else len(documents(np.asarray(ev.tokens()), ev.separator.encode())[0])
    for p in ev.protocols:
        plan = PROTOCOLS.get(p)().plan(ev.train_len, ev.settings, ev.train_len, ev.n_val, contexts[p])
        docs, tokens = token_set_documents(plan)
        entry = {"docs": docs.tolist(), "doc_tokens": tokens.tolist(), "tokens": int(tokens.sum()),
                 "documents_in_split": n_docs}
        if segments is not None:  # the same bytes under every tokenizer: their count says so
            entry["bytes"] = segments.bytes
        out[names[p]] = entry
    return out


def far_context_pairs(names: set[str]) -> set[str]:
    """The rows among ``names`` that stand beside their window control (``x`` and ``x+swaL`` both
    there), and those controls: the rows whose per-token losses the key tokens need."""
    return {n for n in names if n + WINDOW_CONTROL in names
            or (n.endswith(WINDOW_CONTROL) and n[: -len(WINDOW_CONTROL)] in names)}


def score_plans(model, stream: torch.Tensor, plans: list[WindowPlan], L: int, batch_tokens: int, device, bar,
                row: Row | None = None, options: AttentionOptions | None = None,
                per_token: bool = False) -> list[Scores]:
    """Run the windows of several plans at length L, each distinct window once (two protocols
    often share windows): per plan, (summed loss, count) at each position of the window, counting
    only the scored (final) positions of each of its windows, and the summed loss of each document,
    as ``row`` asks (its forward ``options``; explicit positions per batch of windows for
    +randpos, as Ruoss et al. 2023's code samples them at evaluation too, reproducible from
    (L, batch)). ``per_token``: also each scored token's loss, in the order of ``token_layout``."""
    ends = np.unique(np.concatenate([p.ends for p in plans]))
    where = [np.searchsorted(ends, p.ends) for p in plans]  # each plan's windows among the distinct ones (sorted)
    offsets = torch.arange(-L, 0)
    pos_sum = [torch.zeros(L, dtype=torch.float64) for _ in plans]
    pos_count = [torch.zeros(L, dtype=torch.float64) for _ in plans]
    window_nats = [np.zeros(len(p.ends)) for p in plans]
    token_parts: list[list[np.ndarray]] = [[] for _ in plans]
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
            stop = L - torch.as_tensor(plan.tail()[lo:hi])  # the scored positions end before any unscored_last
            at = torch.arange(L)[None, :]
            mask = (at >= (stop - scored)[:, None]) & (at < stop[:, None])  # the scored final positions
            masked = loss[rows_].masked_fill(~mask, 0)
            pos_sum[k] += masked.sum(0)
            pos_count[k] += mask.sum(0).double()
            window_nats[k][lo:hi] = masked.sum(1).numpy()
            if per_token:  # row-major: window by window, positions ascending (token_layout's order)
                token_parts[k].append(loss[rows_][mask].numpy())
        bar.update(x.numel())
    out = []
    for k, plan in enumerate(plans):
        docs, tokens = token_set_documents(plan)
        unit_nats = np.bincount(plan.units, weights=window_nats[k], minlength=len(plan.unit_docs))
        doc_nats = np.bincount(np.searchsorted(docs, plan.unit_docs), weights=unit_nats, minlength=len(docs))
        token_loss = (np.concatenate(token_parts[k]) if token_parts[k] else np.empty(0)) if per_token else None
        out.append(Scores(pos_sum[k].numpy(), pos_count[k].numpy(), doc_nats, docs, tokens, token_loss))
    return out


SMALL_TOKEN_SET = 10_000  # below this, chance moves a perplexity by about a percent or more


def warn_small_token_sets(sets: dict[str, dict]) -> None:
    """One line when a token set scores few tokens at each length (a small local corpus): its
    perplexities are noisy, and ratios between lengths a percent apart may be chance."""
    fewest = min(sets.values(), key=lambda s: s["tokens"], default=None)
    if fewest is not None and fewest["tokens"] < SMALL_TOKEN_SET:
        n = len(fewest["docs"])
        log.warning("small validation set: %s tokens scored at each length (in %d document%s), fewer than %s; "
                    "differences of about a percent may be chance (a larger corpus or data.val_fraction scores more)",
                    f"{fewest['tokens']:,}", n, "" if n == 1 else "s", f"{SMALL_TOKEN_SET:,}")
