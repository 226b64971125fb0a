"""A checkpoint scored with posbench's protocols: the same plans of windows, the same scored tokens and
the same records as posbench's own models get (posbench/evaluation/perplexity.py: ``score_plans``,
``scored_record``), from a transformers model instead of a posbench one.

BOS policy. A window reads L tokens and predicts the L tokens after each; with a BOS token
(``LoadedCheckpoint.bos_id``) its first input is replaced by BOS, so the window still holds L positions
and predicts the very same targets (the first target is predicted from BOS alone, as a text's first
token is in training), and each scored token sees one token of text less. Without one, the window
starts with text, mid-document, as posbench's own models read it.

Rows: the checkpoint as it is (named by its model type, e.g. ``llama``), one per RoPE scaling
asked for (posbench/hf/scalings.py), one per training-free extender (``<family>+rerope``, ``+selfextend``,
``+streaming``: posbench/hf/extenders.py), and with ``--window`` the far-context control ``<family>+swaL``
(posbench/hf/window.py) beside the plain row and beside each scaling row (``<family>+yarn@16x+swaL``).
A length a learned position table cannot hold (GPT-2's n_positions) is recorded as not defined
(``null``) with the reason, in the words posbench's ``learned`` encoding uses; so is a StreamingLLM row
whose cache has no recent key at the context length.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from posbench.core.progress import progress as progress_bar
from posbench.evaluation.perplexity import (
    position_means,
    protocol_contexts,
    score_plans,
    scored_record,
    token_layout,
    undefined_record,
)
from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.resolved import ResolvedEval
from posbench.evaluation.variants import Variant
from posbench.hf import extenders as extenders_
from posbench.hf.checkpoint import LoadedCheckpoint
from posbench.hf.scalings import Scaling, scaled
from posbench.hf.window import SUFFIX, check_windowed, windowed_model
from posbench.store.rundir import per_position_key, token_loss_keys


@dataclass(frozen=True)
class CheckpointRow:
    """One report row of a checkpoint: its name, its record (``row`` of every record) and its scaling."""

    name: str
    encoding: str
    scaling: Scaling | None = None
    window: int | None = None  # +swaL: a sliding window of this many keys (the context length)
    extender: Variant | None = None  # posbench's ReRoPE, SelfExtend or StreamingLLM variant (posbench/hf/extenders.py)

    def record(self) -> dict:
        variants = [self.scaling.record()] if self.scaling else []
        if self.extender is not None:
            variants.append(self.extender.record())
        if self.window is not None:  # posbench's local variant at its defaults (size null: train_len)
            variants.append({"variant": "local", "kind": "sliding", "size": None})
        return {"encoding": self.encoding, "tag": "", "variants": variants}


def checkpoint_rows(family: str, scalings: list[Scaling], window: int | None = None,
                    extenders: list[Variant] = ()) -> list[CheckpointRow]:
    """The plain row, one per scaling, one per extender, and with ``window`` (the context length) the
    controls: ``<family>+swaL`` and each scaling row under the window (``<family>+yarn@16x+swaL``), named and
    recorded as posbench names a row with two variants (the report pairs ``x`` with ``x+swaL``)."""
    rows = [CheckpointRow(family, family)] + [CheckpointRow(family + s.suffix(), family, s) for s in scalings]
    rows += [CheckpointRow(family + v.suffix(), family, extender=v) for v in extenders]
    if window is None:
        return rows
    return rows + [CheckpointRow(family + SUFFIX, family, window=window)] + [
        CheckpointRow(family + s.suffix() + SUFFIX, family, s, window) for s in scalings]


def undefined_reason(ckpt: LoadedCheckpoint, length: int, row: CheckpointRow | None = None) -> str | None:
    """Why the row cannot read a window of ``length`` tokens (a learned table too small; StreamingLLM with no
    recent key at this context length), else None."""
    if ckpt.learned_positions is not None and length > ckpt.learned_positions:
        return f"learned table has {ckpt.learned_positions} positions, window needs {length}"
    return extenders_.extender_undefined_reason(row.extender, ckpt.context_length) if row is not None else None


class WindowForward:
    """score_plans' model: token ids [B, L] -> logits [B, L, V] (float32 or wider) of the checkpoint,
    with the window's first input replaced by BOS where the policy says so, in the checkpoint's own dtype
    (autocast off: the dtype asked for is the one that runs)."""

    def __init__(self, ckpt: LoadedCheckpoint):
        self.ckpt = ckpt

    def __call__(self, x: torch.Tensor, positions=None, options=None) -> torch.Tensor:
        if self.ckpt.bos_id is not None:
            x = x.clone()
            x[:, 0] = self.ckpt.bos_id
        with torch.autocast(x.device.type, enabled=False):
            logits = self.ckpt.model(input_ids=x, use_cache=False).logits
        return logits if logits.dtype == torch.float64 else logits.float()


@torch.inference_mode()
def evaluate_checkpoint(ckpt: LoadedCheckpoint, ev: ResolvedEval, rows: list[CheckpointRow], progress: bool = True,
                        keep_tokens: bool = True) -> tuple[list[dict], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(records, per-position curves, per-token losses) of every row x protocol x length of ``ev``
    (its text: scored_text.with_scored_text on the corpus under the checkpoint's tokenizer).
    ``keep_tokens``: keep each scored token's loss (float16) with its document and position
    (store/rundir.py token_loss_keys), for every row."""
    text, train_len = ev.tokens(), ev.train_len
    sets = ev.token_sets()
    contexts = protocol_contexts(ev)
    plans = {(p, L): PROTOCOLS.get(p)().plan(L, ev.settings, train_len, ev.n_val, contexts[p])
             for p in ev.protocols for L in ev.lengths}
    stream = torch.from_numpy(np.asarray(text).astype(np.int64))
    forward = WindowForward(ckpt)
    records, per_position, token_losses = [], {}, {}
    total = sum(len(np.unique(np.concatenate([plans[p, L].ends for p in ev.protocols]))) * L for L in ev.lengths) * len(rows)
    bar = progress_bar(total=total, unit="tok", desc="eval", enabled=progress)
    try:
        for row in rows:
            with scaled(ckpt.model, row.scaling, train_len), windowed_model(ckpt.model, row.window), \
                    extenders_.extended(ckpt.model, row.extender, train_len):
                for L in ev.lengths:
                    bar.set_description(f"eval {row.name} L={L}")
                    bases = [{"variant": row.name, "protocol": p, "length": L, "multiple": L / train_len,
                              "token_set": sets[p], "min_context": plans[p, L].min_context, "row": row.record()}
                             for p in ev.protocols]
                    if (reason := undefined_reason(ckpt, L, row)) is not None:
                        bar.update(len(np.unique(np.concatenate([plans[p, L].ends for p in ev.protocols]))) * L)
                        records += [undefined_record(base, reason) for base in bases]
                        continue
                    scores = score_plans(forward, stream, [plans[p, L] for p in ev.protocols], L,
                                         ev.settings.batch_tokens, ckpt.device, bar, per_token=keep_tokens)
                    if row.window is not None:
                        check_windowed()
                    if row.extender is not None:
                        extenders_.check_extended()
                    for base, p, sc in zip(bases, ev.protocols, scores):
                        records.append(scored_record(base, sc, plans[p, L], contexts[p], L))
                        per_position[per_position_key(row.name, p, L)] = position_means(sc)
                        if keep_tokens:
                            loss_key, doc_key, pos_key = token_loss_keys(row.name, p, L)
                            token_losses[loss_key] = sc.token_loss.astype(np.float16)
                            token_losses[doc_key], token_losses[pos_key] = token_layout(plans[p, L], L)
    finally:
        bar.close()
    return records, per_position, token_losses
