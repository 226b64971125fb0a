"""``hf_strided``: the strided perplexity of transformers' documentation ("Perplexity of fixed-length
models"), over the concatenated text.

Reference read: huggingface/transformers ``docs/source/en/perplexity.md``: the test set joined into one
token sequence (``"\\n\\n".join(test["text"])``), then

    for begin_loc in range(0, seq_len, stride):
        end_loc = min(begin_loc + max_length, seq_len); trg_len = end_loc - prev_end_loc
        input_ids = enc[begin_loc:end_loc]; target_ids[:, :-trg_len] = -100   # context not scored
        loss = model(input_ids, labels=target_ids).loss                      # labels shifted inside
        ...; prev_end_loc = end_loc; stop after end_loc == seq_len

with max_length the model's context (1024 for GPT-2) and stride 512: every token but the first is
scored once, with at least max_length - stride - 1 tokens of context (all before it in the first
window). As posbench windows: a window of L inputs from ``begin_loc`` whose last prediction (it has no
label inside the input) is not scored (``unscored_last`` 1); the final window, shorter in the
reference, is a window of L here whose predictions past the text are not scored (causal: the same
numbers). Stride: ``eval.stride`` (None: L / 2, the documentation's 512 at 1024).

Deviations: the text is the published text (the separators between documents stand for "\\n\\n" and
are scored, as the joined newlines are); perplexity is the token mean, where the documentation's loop
weighs each window's mean loss by trg_len - 1 (it subtracts one shifted label per window, which only
the first window loses): a weighting that differs by about one token per window, not a different
token set. No BOS anywhere, as in the documented loop (a pull request to transformers' docs finds a
much higher perplexity for a model trained with one when it is missing: posbench's byte models have
none). posbench-eval-hf cannot score it (its text is chosen in bytes, then tokenized: scored_text.py
refuses it).
"""

from __future__ import annotations

from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.protocols.base import PublishedProtocol
from posbench.evaluation.windows import check_within_shortest, stride_for


@PROTOCOLS.register("hf_strided")
class HfStrided(PublishedProtocol):
    order = 70
    words = "transformers' strided perplexity"
    shows_stride = True
    words_short = ("one stream: windows of L from every stride-th token, the tokens after the previous window's "
                   "end scored (transformers docs, perplexity.md)")
    note = ("transformers' documented strided loop over the joined text: windows from every stride-th token (L/2 by "
            "default), each scoring the targets after the previous window's end")

    def check(self, eval_cfg, train_len):
        check_within_shortest("stride", eval_cfg.stride, eval_cfg, train_len, " (or null for L/2)")

    def windows(self, length, eval_cfg, train_len, text):
        L, a, n = length, text.start, text.end - text.start
        S = stride_for(L, eval_cfg.stride)
        ends, scored, tail, docs = [], [], [], []
        prev_end = 0
        for begin in range(0, n, S):
            end = min(begin + L, n)
            m, trg = end - begin, end - prev_end
            count = m - max(1, m - trg)  # labels m - trg .. m - 1 of the input, label 0 never (the shift)
            ends.append(a + begin + L), scored.append(count), tail.append(L - m + 1)
            docs.append(int((text.starts <= a + end - 1).sum()) - 1)  # the document of the last scored target
            prev_end = end
            if end == n:
                break
        return ends, scored, tail, docs
