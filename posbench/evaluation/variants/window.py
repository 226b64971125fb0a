"""Rows ``<encoding>+bca``: blockwise causal attention (Sun et al. 2022, the xPos paper's inference
setting): a query sees the keys of its own block and of the previous one (blocks of train_len / 2),
so between train_len / 2 and train_len keys, whatever the window length. Any encoding listed in
``eval.bca`` (``["*"]``: every encoding) gets the row; it is a control for every encoding (the
window, not the encoding, may be what keeps a row flat: plain RoPE under the same blocks came out
as flat as ``xpos+bca``), so the report lists windowed rows apart from the others."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

from posbench.attention.options import AttentionOptions
from posbench.core.errors import PosbenchError
from posbench.encodings import available
from posbench.evaluation.variants import register
from posbench.evaluation.variants.base import Variant

EVERY = "*"


@register("bca")
class BlockwiseCausal(Variant):
    window = True

    @dataclass
    class Params:
        encodings: List[str] = field(default_factory=list)  # the encodings evaluated with it (eval.bca)

        def check(self) -> None:
            if bad := [e for e in self.encodings if e not in available() and ":" not in e and e != EVERY]:
                raise PosbenchError(f"unknown encoding in eval.bca: {bad[0]!r}; valid: {', '.join(available())} "
                                    f"or {EVERY!r} for every encoding")

    def applies_to(self, encoding) -> bool:
        return EVERY in self.params.encodings or encoding.name in self.params.encodings

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        return opts.replace(block=max(1, train_len // 2))

    def record(self) -> dict:
        return {"variant": self.name}  # which encodings asked for it is not part of what a row is
