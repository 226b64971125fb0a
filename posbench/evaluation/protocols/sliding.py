"""``sliding``: windows advance by a stride (default L/2) and score only their last ``stride`` tokens,
so every scored token sees at least L - stride tokens of context."""

from __future__ import annotations

from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.protocols.base import StreamProtocol
from posbench.evaluation.windows import check_within_shortest, stride_for


@PROTOCOLS.register("sliding")
class Sliding(StreamProtocol):
    order = 20
    words = "sliding windows"
    shows_stride = True
    note = ("posbench's sliding windows: they advance by a stride (default L/2) and score only their last tokens, so every "
            "scored token sees at least L - stride tokens of context")
    needs_history = True
    stride_of = staticmethod(lambda length, eval_cfg: stride_for(length, eval_cfg.stride))

    def check(self, eval_cfg, train_len):
        check_within_shortest("stride", eval_cfg.stride, eval_cfg, train_len, " (or null for L/2)")
