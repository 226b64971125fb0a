"""``nonoverlapping``: consecutive windows tile the scored segments, every token of a window scored
(Press et al. 2022, section 4)."""

from __future__ import annotations

from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.protocols.base import StreamProtocol


@PROTOCOLS.register("nonoverlapping")
class NonOverlapping(StreamProtocol):
    order = 10
    words = "non-overlapping windows"
    note = "consecutive windows, every token scored (tokens early in a window have little context)"
