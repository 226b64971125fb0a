"""``press_sliding``: Press et al.'s sliding windows (ALiBi, section 4): stride 1 by default, the last
token of each window scored, so every scored token has the full window of context."""

from __future__ import annotations

from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.protocols.base import StreamProtocol
from posbench.evaluation.windows import check_within_shortest


@PROTOCOLS.register("press_sliding")
class PressSliding(StreamProtocol):
    order = 30
    words = "Press et al.'s sliding windows"
    shows_stride = True
    note = ("Press et al. (2022)'s sliding evaluation: windows advance by eval.press_stride tokens (1 in the paper) and "
            "score only their last ones, so every scored token sees at least L - stride tokens (L - 1 at stride 1)")
    needs_history = True
    stride_of = staticmethod(lambda length, eval_cfg: min(eval_cfg.press_stride, length))

    def check(self, eval_cfg, train_len):
        check_within_shortest("press_stride", eval_cfg.press_stride, eval_cfg, train_len, " (1 is Press et al.'s)")
