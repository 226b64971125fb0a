"""Key tokens: the rule that chooses them, and each seed's counts of them from the runs' per-token losses.

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

Read here, below the topics, because more than one reads them: the key-token section
(posbench/report/key_tokens/: their statistics, table and figure) and the side-by-side of the
measures (posbench/report/sections/measures.py: each seed's key-token share against its mirror).
"""

from __future__ import annotations

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


# -- from the report's records and the runs' token_losses.npz ------------------------------------


def paired_rows(evals: pd.DataFrame) -> list[tuple]:
    """The cells (``CELL_KEYS``) of unwindowed rows whose window control ``<row>+swaL`` is in ``evals``."""
    done = completed(evals)
    cells = set(map(tuple, done[CELL_KEYS].drop_duplicates().itertuples(index=False)))
    return sorted((c for c in cells if (c[0], c[1] + WINDOW_CONTROL, *c[2:]) in cells), key=lambda c: tuple(map(str, c)))


def bytes_per_token(records: pd.DataFrame) -> float:
    if "bytes_scored" not in records or "tokens_scored" not in records:
        return 1.0
    r = records[(records["bytes_scored"].fillna(0) > 0) & (records["tokens_scored"].fillna(0) > 0)]
    return float((r["bytes_scored"] / r["tokens_scored"]).mean()) if len(r) else 1.0


@dataclass
class SeedKeyCounts:
    """What ``read_key_counts`` took from the runs' token_losses.npz: ``counts``, per (cell, multiple
    above 1, length), each seed's ``KeyCounts`` as [(seed, KeyCounts)] in seed order; ``sums``, per
    (cell, length), the full pass's and the window pass's summed loss and the tokens by position
    [3, L]; ``panels``, per cell, its panel's documents and draws (bootstrap.panel_text)."""

    counts: dict
    sums: dict
    panels: dict


def read_key_counts(evals: pd.DataFrame, load: Callable[[str], dict[str, np.ndarray] | None],
                    token_sets: dict | None, rule: KeyTokenRule = KeyTokenRule(),
                    replicates: int = bootstrap.REPLICATES) -> SeedKeyCounts:
    """Each seed's key-token counts of the rows of ``evals`` that have a window control; ``load(run_id)``:
    that run's token_losses.npz (None: it kept none). Each run's file is read once and reduced to
    per-document counts and per-position sums before the next is read."""
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
            thresholds = rule.thresholds(bytes_per_token(g))
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
    for per_seed in counts.values():
        per_seed.sort(key=lambda sc: sc[0])
    return SeedKeyCounts(counts, sums, panels)


__all__ = ["RULES", "KeyCounts", "KeyTokenRule", "NO_KEY_TOKENS", "SeedKeyCounts", "bytes_per_token", "key_counts",
           "mirror", "paired_rows", "read_key_counts", "select"]
