"""Key tokens: the tokens whose prediction needs the context past train_len, and their perplexity.

Fang et al. 2024, "What is wrong with perplexity for long-context language modeling?" (arXiv
2410.23771, ICLR 2025; reference code PKU-ML/LongPPL, ``longppl/longppl.py`` ``find_key_token`` and
``compute_longppl``) score only the *key tokens* of a long text, chosen per token x_i by the
long-short difference and the long-context likelihood

    LSD(x_i) = log p(x_i | long context) - log p(x_i | short context) > alpha
    LCL(x_i) = log p(x_i | long context) > beta

(natural log; their defaults alpha = 2, beta = -2; in their code ``(loss_short - loss_full) > alpha``
and ``loss_full < -beta``, the short pass giving each block of ``sliding_window`` tokens the
``trunc_len`` tokens before the block), with a separate evaluator model, and LongPPL = exp(mean loss of the evaluated model on the key tokens).

posbench has no evaluator model: the contrast is each row's own. The long pass is the row (every
key up to the window's length); the short pass is its window control ``<row>+swaL``, the same
weights with a sliding window of train_len keys in every layer (posbench/evaluation/variants/local.py),
scored on the same tokens (posbench/evaluation/perplexity.py keeps both passes' per-token losses in
the run's token_losses.npz). So LSD_i = loss_window_i - loss_full_i, LCL_i = -loss_full_i. A token
within the first train_len positions of its window sees the same keys in both passes and is never
a key token; at 1x no token is.

Thresholds on bytes (``KeyTokenRule``). The paper's alpha and beta are log-probabilities of one
Llama-3.1 token (its evaluator, Meta-Llama-3.1-8B), which carries about 3.94 bytes of English text
(Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv 2407.21783, "Model Architecture": 3.94
characters per token on a sample of English, and an English character is about a byte). A byte model spreads that token's information over its bytes, so the rule
here is stated per byte of text: alpha_b = 2 / 3.94 = 0.51 nats per byte, beta_b = -0.51, and a
token of b bytes (b = bytes_scored / tokens_scored of the record: 1 for bytes, the mean for a
subword tokenizer) is chosen with b alpha_b and b beta_b. In probabilities, for a byte: the window
makes it at least 1.66 times less likely, and the full pass gives it more than 0.60. The paper's own
numbers per stored token are ``KeyTokenRule.paper()`` (for a byte model: 7.4 times less likely,
above 0.135; a toy byte model meets this far less often).

A selection read on the same losses it selects by has a gain of at least exp(alpha) per key token
by construction, so the gain on key tokens is read with their share: the informative number is
how many tokens the far context helps by that margin, against ``mirror``, the tokens it hurts by
the same margin (LSD < -alpha with the window pass's likelihood > beta): where far context is noise
the two shares are alike.

Statistics per row and multiple, over seeds and the scored documents (posbench/report/analysis/bootstrap.py:
the panel's document draws, ``Parts`` and its ``estimate``; one seed: text alone): the key-token
share (key tokens / tokens scored), the mirror share, the key-token perplexity of the full pass
(exp of the key tokens' mean loss: LongPPL with the row as its own evaluator) and of the window
pass, and the far-context gain on key tokens, their perplexity under the window over under the full
pass. Perplexities and gains are means of each seed's log value over the seeds with key tokens;
a share's interval (Student's t, which can reach below 0 for a rare share) is held in [0, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from posbench.evaluation.variants.local import WINDOW_CONTROL
from posbench.report.analysis import bootstrap
from posbench.report.analysis.tables import CELL_KEYS, completed
from posbench.store.rundir import token_loss_keys

PAPER_ALPHA, PAPER_BETA = 2.0, -2.0  # Fang et al. 2024, longppl/longppl.py defaults (nats per evaluator token)
LLAMA3_BYTES_PER_TOKEN = 3.94  # the paper's evaluator tokenizer on English (arXiv 2407.21783, Model Architecture)
NO_KEY_TOKENS = "no key tokens"


@dataclass(frozen=True)
class KeyTokenRule:
    """The key-token thresholds: ``alpha`` (LSD) and ``beta`` (LCL) in nats per byte of text
    (``per="byte"``, scaled by each token's bytes), or per stored token (``per="token"``)."""

    alpha: float = PAPER_ALPHA / LLAMA3_BYTES_PER_TOKEN
    beta: float = PAPER_BETA / LLAMA3_BYTES_PER_TOKEN
    per: str = "byte"

    @classmethod
    def paper(cls) -> KeyTokenRule:
        """Fang et al.'s numbers on the stored tokens, unscaled."""
        return cls(PAPER_ALPHA, PAPER_BETA, "token")

    def thresholds(self, bytes_per_token: float = 1.0) -> tuple[float, float]:
        """(alpha, beta) in nats per stored token for tokens of ``bytes_per_token`` bytes."""
        scale = bytes_per_token if self.per == "byte" else 1.0
        return self.alpha * scale, self.beta * scale

    def describe(self) -> str:
        if self.per == "byte":
            return (f"LSD > {self.alpha:.2f} and LCL > {self.beta:.2f} nats per byte (Fang et al.'s 2 and -2 per "
                    f"Llama-3 token over its {LLAMA3_BYTES_PER_TOKEN} bytes)")
        return f"LSD > {self.alpha:g} and LCL > {self.beta:g} nats per token (Fang et al.'s numbers)"


RULES = {"bytes": KeyTokenRule(), "paper": KeyTokenRule.paper()}  # posbench-report --key-tokens


def select(full: np.ndarray, window: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The key tokens: LSD = window - full > alpha and LCL = -full > beta (losses in nats)."""
    full, window = np.asarray(full, dtype=float), np.asarray(window, dtype=float)
    return (window - full > alpha) & (-full > beta)


def mirror(full: np.ndarray, window: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The tokens the far context hurts by the same margin: ``select`` with the passes swapped."""
    return select(window, full, alpha, beta)


@dataclass
class KeyCounts:
    """One seed at one length, per document [D]: tokens scored, key tokens, the key tokens' summed
    loss under the full and the window pass, and mirror tokens."""

    tokens: np.ndarray
    key: np.ndarray
    key_full: np.ndarray
    key_window: np.ndarray
    mirror: np.ndarray


def key_counts(full: np.ndarray, window: np.ndarray, doc: np.ndarray, n_docs: int, alpha: float,
               beta: float) -> KeyCounts:
    full, window = np.asarray(full, dtype=float), np.asarray(window, dtype=float)
    key = select(full, window, alpha, beta)
    count = lambda w=None: np.bincount(doc, weights=w, minlength=n_docs).astype(float)  # noqa: E731
    return KeyCounts(count(), count(key.astype(float)), count(np.where(key, full, 0.0)),
                     count(np.where(key, window, 0.0)), count(mirror(full, window, alpha, beta).astype(float)))


@dataclass(frozen=True)
class KeyStats:
    """A row at one multiple: each statistic as (mean, lo, hi) with its 95% interval; ``seeds`` and
    ``seeds_with_keys``; ``key_tokens`` summed over seeds."""

    share: tuple
    mirror_share: tuple
    key_ppl: tuple
    key_ppl_window: tuple
    gain: tuple
    seeds: int
    seeds_with_keys: int
    key_tokens: int


def _parts(seeds, num: np.ndarray, den: np.ndarray, draws: bootstrap.Draws | None) -> bootstrap.Parts:
    """sum(num) / sum(den) per seed ([S, D] each) as bootstrap Parts: the value per seed, on each of
    the panel's document draws, and its per-document parts."""
    y = num.sum(1) / den.sum(1)
    reps = None
    if draws is not None:
        with np.errstate(invalid="ignore", divide="ignore"):  # a draw without a key token: NaN, no interval
            reps = (draws.doc_counts @ num.T) / (draws.doc_counts @ den.T)
    return bootstrap.Parts(tuple(seeds), y, reps, num.shape[1], bootstrap.Documents(num.mean(0), den.mean(0)))


def _exp(e: bootstrap.Estimate) -> tuple:
    return tuple(math.exp(v) if np.isfinite(v) else math.nan for v in (e.mean, e.lo, e.hi))


def _share(e: bootstrap.Estimate) -> tuple:
    """A share with its interval, held in [0, 1] (the t interval of a rare share reaches below 0)."""
    clip = lambda v: min(max(v, 0.0), 1.0) if np.isfinite(v) else v  # noqa: E731
    return e.mean, clip(e.lo), clip(e.hi)


NONE3 = (math.nan, math.nan, math.nan)


def key_stats(seeds, counts: list[KeyCounts], draws: bootstrap.Draws | None) -> KeyStats:
    """The statistics of one row at one multiple from each seed's ``KeyCounts`` (same documents)."""
    stack = lambda f, idx: np.stack([getattr(counts[i], f) for i in idx])  # noqa: E731
    every = list(range(len(counts)))
    share = _share(_parts(seeds, stack("key", every), stack("tokens", every), draws).estimate())
    mirror_share = _share(_parts(seeds, stack("mirror", every), stack("tokens", every), draws).estimate())
    keyed = [i for i in every if counts[i].key.sum() > 0]
    n_key = int(sum(counts[i].key.sum() for i in every))
    if not keyed:
        return KeyStats(share, mirror_share, NONE3, NONE3, NONE3, len(counts), 0, 0)
    s = [seeds[i] for i in keyed]
    key, full, window = stack("key", keyed), stack("key_full", keyed), stack("key_window", keyed)
    ppl = _exp(_parts(s, full, key, draws).estimate())
    ppl_window = _exp(_parts(s, window, key, draws).estimate())
    gain = _exp(_parts(s, window - full, key, draws).estimate())
    return KeyStats(share, mirror_share, ppl, ppl_window, gain, len(counts), len(keyed), n_key)


# -- from the report's records and the runs' token_losses.npz ------------------------------------


def paired_rows(evals: pd.DataFrame) -> list[tuple]:
    """The cells (``CELL_KEYS``) of unwindowed rows whose window control ``<row>+swaL`` is in ``evals``."""
    done = completed(evals)
    cells = set(map(tuple, done[CELL_KEYS].drop_duplicates().itertuples(index=False)))
    return sorted((c for c in cells if (c[0], c[1] + WINDOW_CONTROL, *c[2:]) in cells), key=lambda c: tuple(map(str, c)))


def _bytes_per_token(records: pd.DataFrame) -> float:
    if "bytes_scored" not in records or "tokens_scored" not in records:
        return 1.0
    r = records[(records["bytes_scored"].fillna(0) > 0) & (records["tokens_scored"].fillna(0) > 0)]
    return float((r["bytes_scored"] / r["tokens_scored"]).mean()) if len(r) else 1.0


@dataclass
class KeyTokenFrames:
    """``table``: one row per (row with a window control, multiple above 1) whose runs kept both
    passes' per-token losses: the cell's keys (``CELL_KEYS``), ``multiple``, ``length``, ``seeds`` /
    ``seeds_with_keys``, ``key_tokens``, and ``share``, ``mirror_share``, ``key_ppl``, ``key_ppl_window``,
    ``gain`` each with ``_lo`` / ``_hi`` (``key_stats``); empty where no run kept them. ``curves``: per
    such row at its longest length with per-token losses, (length, mean loss by position under the
    full pass [L], under the window pass [L]) over every seed's scored tokens (NaN where none is scored)."""

    table: pd.DataFrame
    curves: dict


def key_token_frames(evals: pd.DataFrame, load: Callable[[str], dict[str, np.ndarray] | None],
                     token_sets: dict | None, rule: KeyTokenRule = KeyTokenRule(),
                     replicates: int = bootstrap.REPLICATES) -> KeyTokenFrames:
    """The key-token table and the window curves of the rows of ``evals`` that have a window control;
    ``load(run_id)``: that run's token_losses.npz (None: it kept none). Each run's file is read once
    and reduced to per-document counts and per-position sums before the next is read."""
    done = completed(evals)
    done = done[done["ppl"].notna()]
    wanted: dict[str, list] = {}  # run id -> what to take from its file
    panels = {}
    for cell in paired_rows(done):
        protocol, variant, model, train_len = cell
        panel = done[(done["protocol"] == protocol) & (done["model"] == model) & (done["train_len"] == train_len)]
        panels[cell] = bootstrap.panel_text(panel, token_sets, replicates)
        own = panel[panel["variant"] == variant]
        for (multiple, length), g in own.groupby(["multiple", "length"]):
            thresholds = rule.thresholds(_bytes_per_token(g))
            for seed, rid in zip(g["seed"], g["run_id"]):
                wanted.setdefault(rid, []).append((cell, float(multiple), int(length), seed, thresholds))
    counts: dict[tuple, list] = {}  # (cell, multiple, length) -> [(seed, KeyCounts)]
    sums: dict[tuple, list] = {}  # (cell, length) -> [full sums, window sums, tokens] by position
    for rid, items in wanted.items():
        arrays = load(rid) or {}
        for cell, multiple, length, seed, (alpha, beta) in items:
            protocol, variant = cell[0], cell[1]
            loss_key, doc_key, pos_key = token_loss_keys(variant, protocol, length)
            control_key = token_loss_keys(variant + WINDOW_CONTROL, protocol, length)[0]
            if not {loss_key, control_key, doc_key, pos_key} <= arrays.keys():
                continue
            full, window = arrays[loss_key].astype(float), arrays[control_key].astype(float)
            pos = arrays[pos_key].astype(np.int64)
            s = sums.setdefault((cell, length), [np.zeros(length), np.zeros(length), np.zeros(length)])
            for k, w in enumerate((full, window, None)):
                s[k] += np.bincount(pos, weights=w, minlength=length)[:length]
            if multiple <= 1:
                continue
            doc = arrays[doc_key].astype(np.int64)
            doc_tokens = panels[cell][0]
            n_docs = len(doc_tokens) if doc_tokens is not None else int(doc.max()) + 1
            if len(doc) and doc.max() >= n_docs:
                continue  # not the token set the records name: never read against the wrong documents
            counts.setdefault((cell, multiple, length), []).append((seed, key_counts(full, window, doc, n_docs, alpha,
                                                                                     beta)))
        del arrays
    rows = []
    for (cell, multiple, length), per_seed in sorted(counts.items(), key=lambda kv: (tuple(map(str, kv[0][0])), kv[0][1])):
        per_seed.sort(key=lambda sc: sc[0])
        doc_tokens, draws = panels[cell]
        st = key_stats([sd for sd, _ in per_seed], [c for _, c in per_seed], draws if doc_tokens is not None else None)
        row = dict(zip(CELL_KEYS, cell), multiple=multiple, length=length, seeds=st.seeds,
                   seeds_with_keys=st.seeds_with_keys, key_tokens=st.key_tokens)
        for name in ("share", "mirror_share", "key_ppl", "key_ppl_window", "gain"):
            row[name], row[f"{name}_lo"], row[f"{name}_hi"] = getattr(st, name)
        rows.append(row)
    curves = {}
    for (cell, length), (full, window, n) in sorted(sums.items(), key=lambda kv: (tuple(map(str, kv[0][0])), kv[0][1])):
        with np.errstate(invalid="ignore", divide="ignore"):
            curves[cell] = (length, full / n, window / n)  # the longest length last: it stays
    return KeyTokenFrames(pd.DataFrame(rows), curves)


__all__ = ["RULES", "KeyTokenFrames", "KeyTokenRule", "KeyCounts", "KeyStats", "NO_KEY_TOKENS", "key_counts", "key_stats",
           "key_token_frames", "mirror", "paired_rows", "select"]
