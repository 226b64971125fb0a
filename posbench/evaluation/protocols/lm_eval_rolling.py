"""``lm_eval_rolling``: lm-evaluation-harness's rolling log-likelihood (the perplexity tasks: wikitext,
pile, ...), document by document, disjoint windows.

Reference read: EleutherAI/lm-evaluation-harness ``lm_eval/utils.py`` ``get_rolling_token_windows`` and
``make_disjoint_window``, and ``lm_eval/models/huggingface.py`` ``HFLM.loglikelihood_rolling``, which calls
them with ``prefix_token=self.prefix_token_id`` (the tokenizer's BOS, else its EOT),
``max_seq_len=self.max_length`` and ``context_len=1``. With context_len 1 the prediction windows are
max_seq_len = L long and disjoint:

    first window:  inputs [prefix] + doc[:L-1]    predicts doc[0 : min(L, n)], all of them
    then, with p tokens predicted so far and e = min(p + L, n):
                   inputs doc[e - 1 - L : e - 1]    predicts doc[p : e]  (the L tokens before the last target)

i.e. non-overlapping windows laid from each document's start, the first one reading the prefix token
first; a final window with fewer than L targets reads the L tokens before its last target. Every token
of every document is scored once, the separators never. lm-eval reports per document the summed
log-likelihood and aggregates word_perplexity, byte_perplexity and bits_per_byte (summed nats over
summed words or bytes): posbench's bits per byte is that bits_per_byte.

Deviations: the prefix token is the separator before the document (posbench's byte models have no BOS).
A document shorter than L is one window from its prefix, its predictions past the document not scored
(lm-eval feeds a shorter window: causal, the same numbers). Documents: the published text's
(windows.published_text), not a dataset's test split. posbench-eval-hf cannot score it (its text is
chosen in bytes, then tokenized: scored_text.py refuses it).
"""

from __future__ import annotations

from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.protocols.base import PublishedProtocol


@PROTOCOLS.register("lm_eval_rolling")
class LmEvalRolling(PublishedProtocol):
    order = 50
    words = "lm-eval's rolling log-likelihood"
    words_short = ("per document: disjoint windows of L predictions, the first read after a prefix token "
                   "(lm-eval loglikelihood_rolling, context_len=1)")
    note = ("lm-evaluation-harness's loglikelihood_rolling: each document in disjoint windows of L predicted tokens, "
            "the first after a prefix token; every document token scored once")

    def windows(self, length, eval_cfg, train_len, text):
        L = length
        ends, scored, tail, docs = [], [], [], []
        for d, (s, t) in enumerate(zip(text.starts.tolist(), text.ends.tolist())):
            n = t - s
            first = min(L, n)  # the prefix and doc[:L-1] predict doc[:L]
            ends.append(s - 1 + L), scored.append(first), tail.append(L - first), docs.append(d)
            done = first
            while done < n:  # the next window_pred_len targets, read from the L tokens before the last
                k = min(n - done, L)
                ends.append(s + done + k - 1), scored.append(k), tail.append(0), docs.append(d)
                done += k
        return ends, scored, tail, docs
