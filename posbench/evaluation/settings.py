"""The ``eval`` settings (``EvalConfig``) and their checks, shared by posbench-train and posbench-eval
so that both refuse the same values in the same words."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

from posbench.core.errors import PosbenchError
from posbench.core.registry import plugin_code
from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.variants import check_variant_settings


@dataclass(frozen=True)
class EvalConfig:
    """What a trained model is scored on (``eval=`` in conf/eval/). The scored tokens are fixed by
    these settings, never by the multiples: a 1x number does not change when other lengths are
    asked for, and nonoverlapping and sliding score the same tokens."""

    multiples: List[float] = field(default_factory=lambda: [1, 2, 4, 8, 16])  # must include 1
    protocols: List[str] = field(default_factory=lambda: ["nonoverlapping", "sliding"])  # and/or press_sliding, fixed_target
    stride: Optional[int] = None  # sliding: tokens between windows (context >= L - stride); None: L / 2
    press_stride: int = 1  # press_sliding: Press et al.'s stride 1 (context >= L - 1); a few tokens to make it cheaper
    # the stream protocols' scored text: segments of `segment` targets spread over the validation documents
    scored_tokens: Optional[int] = None  # T; None: one segment in every document long enough (at most 128)
    segment: Optional[int] = None  # targets per segment; None: 16 x train_len (non-overlapping windows tile it up to 16x)
    first_scored: Optional[int] = None  # S0, no target before it; None: 16 x train_len (history for every window up to 16x)
    target_tokens: Optional[int] = None  # fixed_target: final tokens of each document; None: train_len / 2
    target_docs: int = 64  # fixed_target: documents scored
    # the published protocols (lm_eval_rolling, hf_strided, lceg_starts, yarn_truncated): this many whole consecutive
    # validation documents from first_scored on (LCEG's ten; posbench/evaluation/windows.py published_text)
    published_docs: int = 10
    lceg_stride: Optional[int] = None  # lceg_starts: tokens between window starts; None: train_len / 16 (LCEG's 256 at 4096)
    batch_tokens: int = 16384  # tokens per forward pass
    # evaluation-time variants: extra rows from the same weights (posbench/evaluation/variants/)
    rope_scaling: List[str] = field(default_factory=list)  # rope: any of the RoPE scalings (linear, ntk, dynamic_ntk, yarn)
    rope_factor: Optional[float] = None  # static scalings' s; None: the longest multiple (>= 1 when set)
    bca: List[str] = field(default_factory=lambda: ["xpos"])  # encodings also evaluated with blockwise causal attention
    # attention temperature c: rows <encoding>+temp<c> with every logit x (1 + c ln(L / train_len))
    temperature: List[float] = field(default_factory=list)
    # any other variant by name (a plug-in's entry point or module:attr), or {name: ..., <its settings>}
    variants: List[Any] = field(default_factory=list)
    # fractions of train.steps at which training stops briefly to score 1x and the longest multiple
    # (nonoverlapping, the same tokens as the final evaluation) into metrics["during_training"]
    during_training: List[float] = field(default_factory=list)
    # per layer and head: mean attention distance and entropy at every length (posbench/evaluation/diagnostics.py),
    # over attention_examples windows of the validation text (a task run: examples of its task)
    attention_stats: bool = False
    attention_examples: int = 4

    def check(self, train_len: int) -> None:
        """Every check of the evaluation settings, for posbench-train and posbench-eval alike."""
        check_eval(self, train_len)
        if bad := [f for f in self.during_training if not 0 < f <= 1]:
            raise PosbenchError(f"eval.during_training holds fractions of train.steps in (0, 1], got {bad[0]:g}")
        if self.during_training and "nonoverlapping" not in self.protocols:
            raise PosbenchError("eval.during_training scores the nonoverlapping protocol: add it to eval.protocols "
                                f"(got {list(self.protocols)}) or set eval.during_training=[]")
        if self.attention_examples < 1:
            raise PosbenchError(f"eval.attention_examples must be a positive integer, got {self.attention_examples}")

        check_variant_settings(self)


def check_multiples(multiples, train_len: int) -> None:
    """Positive multiples that include 1 (the baseline of every ratio) and give whole lengths."""
    if not multiples:
        raise PosbenchError("eval.multiples is empty; give positive multiples of train_len, e.g. [1,2,4,8,16]")
    if bad := [x for x in multiples if x <= 0]:
        raise PosbenchError(f"eval.multiples must be positive, got {bad[0]:g}; e.g. [1,2,4,8,16]")
    if 1 not in multiples:
        raise PosbenchError(f"eval.multiples={list(multiples)} must include 1 (the training length, the baseline of every ratio); "
                            "e.g. [1,2,4,8,16]")
    if bad := [x for x in multiples if abs(train_len * x - round(train_len * x)) > 1e-9]:
        raise PosbenchError(f"eval.multiples: {bad[0]:g} x train_len={train_len} is {train_len * bad[0]:g} tokens, "
                            "not a whole length; use multiples that give whole lengths, e.g. [1,2,4,8,16]")


NULLABLE = ("scored_tokens", "segment", "lceg_stride")


def check_eval(eval_cfg, train_len: int) -> None:
    """One-line errors for evaluation settings that types cannot express (each protocol checks its own)."""
    check_multiples(eval_cfg.multiples, train_len)
    protocols = list(eval_cfg.protocols)
    if not protocols:
        raise PosbenchError(f"eval.protocols is empty; give any of {', '.join(PROTOCOLS.names())}")
    if bad := [p for p in protocols if p not in PROTOCOLS.names() and ":" not in p]:
        raise PosbenchError(f"unknown eval protocol {bad[0]!r}; valid: {', '.join(PROTOCOLS.names())}")
    for p in protocols:
        cls = PROTOCOLS.get(p)
        with plugin_code("eval protocol", p, cls.__module__, "checking the settings"):
            cls().check(eval_cfg, train_len)
    if eval_cfg.first_scored is not None and eval_cfg.first_scored < 1:
        raise PosbenchError(f"eval.first_scored must be positive (or null for 16 x train_len), got {eval_cfg.first_scored}")
    for key in ("scored_tokens", "segment", "target_docs", "batch_tokens", "published_docs", "lceg_stride"):
        if getattr(eval_cfg, key) is not None and getattr(eval_cfg, key) < 1:
            raise PosbenchError(f"eval.{key} must be a positive integer, got {getattr(eval_cfg, key)}"
                                + (" (or null for the default)" if key in NULLABLE else ""))
