"""``lceg_starts``: LCEG's perplexity (Lu et al. 2024, "A Controlled Study on Long Context Extension
and Generalization in LLMs", arXiv 2409.12181): windows of L tokens starting every 256 tokens of the
concatenated text, every token of each scored.

Reference read: Leooyii/LCEG ``eval_perplexity/eval_pi.py`` (and its ``scripts/eval_ppl_pi.sh``; the other
methods' eval_*.py beside it were not read):
``get_as_batch``: ``all_ix = list(range(0, len(data) - seq_length, sliding_window)); all_ix.pop()``
with ``sliding_window=256``, each window ``x = data[i : i + seq_length]``, the loss
``model(input_ids=x, labels=x).loss`` (labels shifted inside: the L - 1 targets x[1:]); the reported
loss is the mean over windows of each window's mean (equal counts: the token mean), perplexity
``2.71828 ** loss``; the data: the first 10 documents of PG19's test set (``data[:doc_start_idx[10]]``),
one concatenated token stream. Windows overlap by L - 256 tokens, so a token is scored up to
L / 256 times, with a context that varies from 0 to L - 2 tokens: an average over positions, which
the windows' starts place, not a sliding evaluation. Which tokens, and how often, changes with L.

Here: the published text as the stream; window starts every ``eval.lceg_stride`` tokens (None:
train_len / 16, LCEG's 256 at its models' 4096 training tokens), the last start dropped as the
reference drops it, each window's last prediction unscored (``unscored_last`` 1). Deviations: the
published text instead of PG19's first 10 books; e^loss instead of 2.71828^loss (a relative
difference of 7e-7 in the exponent).
"""

from __future__ import annotations

from posbench.core.errors import PosbenchError
from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.protocols.base import PublishedProtocol

LCEG_WINDOW_STARTS = 256  # sliding_window in the reference
LCEG_TRAIN_LEN = 4096  # its models' pre-training context (Llama 2), against which the 256 is scaled


def lceg_stride(eval_cfg, train_len: int) -> int:
    """Tokens between window starts: ``eval.lceg_stride``, or 256 scaled from 4096 to train_len."""
    if eval_cfg.lceg_stride is not None:
        return eval_cfg.lceg_stride
    return max(1, train_len * LCEG_WINDOW_STARTS // LCEG_TRAIN_LEN)


@PROTOCOLS.register("lceg_starts")
class LcegStarts(PublishedProtocol):
    order = 80
    words = "LCEG's window starts"
    fixed_targets = False
    words_short = ("one stream: windows of L starting every 256 tokens (scaled), all L-1 targets of each scored, "
                   "tokens counted up to L/256 times (LCEG eval_perplexity)")
    note = ("LCEG's eval_perplexity: windows starting every 256 tokens (train_len/16 here), every target scored, "
            "so tokens are scored several times with contexts from 0 to L-2")

    def windows(self, length, eval_cfg, train_len, text):
        L, a, n = length, text.start, text.end - text.start
        starts = list(range(0, n - L, lceg_stride(eval_cfg, train_len)))[:-1]  # all_ix.pop(): the last dropped
        if not starts:
            raise PosbenchError(f"lceg_starts: the published text ({n} tokens) holds no window of {L} tokens; "
                                "raise eval.published_docs")
        # x = text[i : i + L] predicts text[i + 1 : i + L]: the window ending at a + i + L, its last prediction unscored
        return ([a + i + L for i in starts], [L - 1] * len(starts), [1] * len(starts),
                [int((text.starts <= a + i + L - 1).sum()) - 1 for i in starts])
