"""The old import path of the evaluation protocols' plug-in API (now posbench/evaluation/protocols/
and posbench/evaluation/windows.py), kept for plug-ins written against it. posbench itself imports
the new paths (.importlinter forbids this module inside)."""

from posbench.evaluation.protocols import PROTOCOLS, plan_windows, token_set
from posbench.evaluation.protocols.base import Protocol, StreamProtocol
from posbench.evaluation.settings import EvalConfig
from posbench.evaluation.windows import (
    Segments,
    WindowPlan,
    check_within_shortest,
    documents,
    eval_lengths,
    first_scored,
    segment_length,
    stream_segments,
    target_tokens,
)

__all__ = ["PROTOCOLS", "EvalConfig", "Protocol", "Segments", "StreamProtocol", "WindowPlan", "check_within_shortest",
           "documents", "eval_lengths", "first_scored", "plan_windows", "segment_length", "stream_segments",
           "target_tokens", "token_set"]
