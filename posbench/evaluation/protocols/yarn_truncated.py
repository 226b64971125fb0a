"""``yarn_truncated``: YaRN's perplexity evaluation (Peng et al. 2023, arXiv 2309.00071): every document
truncated to the window, scored from its start, the mean of the documents' perplexities.

Reference read: jquesnelle/yarn ``eval/perplexity.py`` (``Perplexity._compute``): the tokenizer is
called with ``truncation=True, max_length=max_length - 1`` (room for the BOS that ``add_start_token``
puts first), the model reads [BOS] + doc[:L-1] with ``labels = input``, so it scores doc[0 : min(n, L-1)],
each from the document's start; per document ``exp(mean loss)``, and the reported number is
``np.mean`` of those perplexities over the documents (default: the first 50 of gov_report's test split,
lengths 200 to 8000 in steps of 200). Nothing slides: tokens past L - 1 of a document are never scored,
so at each length another set of tokens is scored (the early tokens of each document, where a model's
loss is highest); the reference repository's issues discuss it.

Here: one window per document of the published text, reading the separator before it (in the BOS's
place: posbench's byte models have none) and the document, its first
min(n, L - 1) predictions scored, none past the document. The record's perplexity is exp(token mean);
the mean of per-document perplexities, YaRN's number, is computed from the records' per-document nats by
scripts/published_protocols.py. Deviation: the published text's documents instead of gov_report's.
"""

from __future__ import annotations

from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.protocols.base import PublishedProtocol


@PROTOCOLS.register("yarn_truncated")
class YarnTruncated(PublishedProtocol):
    order = 60
    words = "YaRN's truncated documents"
    fixed_targets = False
    words_short = ("per document: [BOS] + its first L-1 tokens, all scored; tokens past L-1 never "
                   "(YaRN eval/perplexity.py; mean of per-document perplexities)")
    note = ("YaRN's eval/perplexity.py: each document truncated to the window and scored from its start (nothing "
            "slides); another set of tokens at each length")

    def windows(self, length, eval_cfg, train_len, text):
        L = length
        n = (text.ends - text.starts).tolist()
        k = [min(m, L - 1) for m in n]  # [BOS] + doc[:L-1] predicts doc[:L-1]
        return ((text.starts - 1 + L).tolist(), k, [L - x for x in k], list(range(len(n))))
