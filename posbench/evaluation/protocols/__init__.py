"""Evaluation protocols: which windows of the validation stream a model reads at length L, and
which of their tokens are scored.

A window is given by its end e: the model reads tokens ``stream[e - L : e]`` and predicts
``stream[e - L + 1 : e + 1]``; only the last ``scored`` predictions of the window count.

Which tokens are scored is fixed by the settings and the corpus alone, never by the lengths asked
for or by when they were asked for (``token_set`` names it; every record carries that name). The
stream protocols score *segments* spread over the whole validation split: one segment of
``eval.segment`` targets (default 16 x train_len, the longest default window, so that the
non-overlapping protocol tiles it at every length) inside every validation document long enough to
hold one (at most 128 documents, evenly chosen), placed in the middle of the document; with
``eval.scored_tokens`` = T, T / segment segments instead (one per document first, the rest by
document length). No scored target lies before ``eval.first_scored`` (default 16 x train_len), so
every window up to 16x has its full history. So a 1x number is the same whichever other multiples
were requested, nonoverlapping and sliding numbers score the same tokens and can be compared with
each other, and the text scored represents the split rather than one stretch of it: a verdict read
from three files can be an artefact of those files (the same checkpoint's 16x/1x measured 1.80 and 2.15 on two
stretches of one split). Every record keeps its summed loss per document, so the report
can bootstrap over documents.

``nonoverlapping`` (Press et al. 2022, section 4)
    Consecutive windows tile the scored range, every token of a window scored (a final partial
    window reads the L tokens before its end and scores only the rest). Lengths differ only in how
    much context and which positions the model gets. A token near a window's start has almost no
    context: this protocol mixes "uses longer context" with "suffers less from the early-token curse".
``sliding`` (posbench's own; stride S, default L / 2)
    Windows advance by S tokens and score only their last S tokens, so every scored token sees at
    least L - S tokens of context. Costs L / S times the non-overlapping protocol; with the default
    stride every other window is a non-overlapping window, and the evaluator runs a window once for
    both protocols. Press et al.'s sliding evaluation is stride 1: that is ``press_sliding``.
``press_sliding`` (Press et al. 2022; their fairseq evaluation's ``--context-window L-1``)
    Stride ``eval.press_stride`` (default 1): every scored token sees at least L - stride tokens of
    context (L - 1 at stride 1, as in the paper). Costs L / stride times the non-overlapping protocol:
    meant for a GPU, or for short lengths on CPU.
``fixed_target`` (the control of Kazemnejad et al. 2023)
    The last m = ``eval.target_tokens`` tokens (default train_len / 2) of ``eval.target_docs``
    validation documents that end after S0 are scored at every length, with the L - m tokens before
    them as context (which may reach into the previous document). The targets never change, so a
    change with L is the effect of more context and of the far positions the targets now sit at,
    without the early-token curse. Its targets are not those of the stream protocols.
``lm_eval_rolling``, ``hf_strided``, ``lceg_starts``, ``yarn_truncated`` (the published protocols)
    Perplexity as lm-evaluation-harness, transformers' documentation, LCEG and YaRN compute it, on
    the published text (``eval.published_docs`` whole consecutive documents from S0:
    windows.published_text); each its own token set (LCEG's repeat tokens, YaRN's change with L), so
    they stand beside posbench's only in scripts/published_protocols.py. A window may leave its last
    predictions unscored (WindowPlan.unscored_last: a reference's labels = inputs, or a shorter
    reference window). Rules and references: each module's docstring.
"""

from __future__ import annotations

from posbench.core.registry import Registry, subclass_check
from posbench.evaluation.protocols.base import Protocol
from posbench.evaluation.windows import WindowPlan


def token_set(protocol: str, eval_cfg, train_len: int, n_val: int = 0, corpus_hash: str = "") -> str:
    """The name of the tokens a protocol scores at every length. Two records are comparable (same
    targets) exactly when their token sets are equal; nonoverlapping, sliding and press_sliding
    share theirs. The name follows from the settings and the corpus (its hash) alone."""
    return PROTOCOLS.get(protocol)().token_set(eval_cfg, train_len, n_val, corpus_hash)


def plan_windows(protocol: str, length: int, eval_cfg, train_len: int, n_val: int, context=None) -> WindowPlan:
    """The windows of one protocol at length L (``context``: what the protocol's ``prepare`` found
    in the validation split: the stream protocols' segments, fixed_target's document ends). The
    scored targets depend only on the settings and the split (``token_set``), never on L."""
    return PROTOCOLS.get(protocol)().plan(length, eval_cfg, train_len, n_val, context)


PROTOCOLS: Registry[type[Protocol]] = Registry("eval protocol", "posbench.protocols", "posbench.evaluation.protocols", check=subclass_check(Protocol),
                                               sort=lambda protocol: protocol.order)
