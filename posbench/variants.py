"""Evaluation-only variants: the same weights, scored another way, each its own report row. Their
names, and how a model is set up for one. A light module (no torch), shared by the encodings, the
scorers (perplexity and tasks) and the report."""

import math
import re

BCA_SUFFIX = "+bca"  # blockwise causal attention (the xPos paper's inference setting)
RANDPOS_SUFFIX = "+randpos"  # sampled positions, as trained with train.random_positions
TEMP_SUFFIX = "+temp"  # attention temperature: "+temp0.1" multiplies every logit by 1 + 0.1 ln(L / train_len)

_TEMP = re.compile(r"\+temp([0-9.eE+-]+)$")


def check_variant_settings(eval_cfg) -> None:
    """The variant keys of the evaluation settings: known names, values in range."""
    from posbench.encodings import available
    from posbench.encodings.rope import ROPE_SCALINGS
    from posbench.errors import PosbenchError

    if bad := [s for s in eval_cfg.rope_scaling if s not in ROPE_SCALINGS]:
        raise PosbenchError(f"unknown eval.rope_scaling {bad[0]!r}; valid: {', '.join(ROPE_SCALINGS)}")
    if eval_cfg.rope_factor is not None and eval_cfg.rope_factor < 1:
        raise PosbenchError(f"eval.rope_factor must be at least 1 (or null), got {eval_cfg.rope_factor:g}")
    if bad := [e for e in eval_cfg.bca if e not in available() and ":" not in e]:
        raise PosbenchError(f"unknown encoding in eval.bca: {bad[0]!r}; valid: {', '.join(available())}")
    if bad := [c for c in eval_cfg.temperature if not 0 <= c <= 10]:
        raise PosbenchError(f"eval.temperature holds coefficients c in [0, 10] (logits x (1 + c ln s)), got {bad[0]:g}")


def temperature_name(c: float) -> str:
    return f"{TEMP_SUFFIX}{c:g}"


def temperature_of(variant: str) -> float | None:
    """c of an attention-temperature variant (``alibi+temp0.1`` -> 0.1), None for any other."""
    m = _TEMP.search(variant)
    return float(m.group(1)) if m else None


def logit_scale(variant: str, length: int, train_len: int) -> float:
    """The factor on every attention logit of ``variant`` at windows of ``length``:
    1 + c ln s with s = length / train_len (1 at and below the training length)."""
    c = temperature_of(variant)
    return 1.0 if c is None else 1.0 + c * math.log(max(1.0, length / train_len))


def base_variant(variant: str) -> str:
    """The encoding's own variant name without an evaluation-only suffix."""
    return _TEMP.sub("", variant.removesuffix(BCA_SUFFIX).removesuffix(RANDPOS_SUFFIX))


def extension_tag(method: str, factor: float, steps: int) -> str:
    """The row-name tag of an extension run: ``+yarn@4x+ft100`` (RoPE method), ``@4x+ft100`` (plain)."""
    return f"{'' if method == 'none' else '+' + method}@{factor:g}x+ft{steps}"


def tag_variant(variant: str, name: str, tag: str) -> str:
    """Insert an extension run's tag after the encoding's name: ``xpos+bca`` -> ``xpos@4x+ft100+bca``."""
    return name + tag + variant[len(name):] if tag and variant.startswith(name) else variant


def row_names(enc, eval_cfg) -> dict[str, str]:
    """The variants a model of this encoding is evaluated as, each mapped to its report row's name
    (an extension run's rows carry its tag: ``rope`` -> ``rope+yarn@4x+ft100``)."""
    variants = enc.eval_variants(eval_cfg)
    if enc.shape.max_position > enc.shape.train_len:  # trained on randomized positions: also evaluate as trained
        variants.append(f"{enc.name}{RANDPOS_SUFFIX}")
    return {v: tag_variant(v, enc.name, enc.variant_tag) for v in variants}


def use_variant(model, variant: str | None, length: int, eval_cfg) -> None:
    """Set ``model`` up to score ``variant`` at windows of ``length`` tokens (blockwise causal
    attention, the encoding's evaluation-time configuration, the attention temperature); None: back
    to the trained configuration. Every scorer (perplexity, tasks) goes through here."""
    enc, train_len = model.encoding, model.encoding.shape.train_len
    if variant is None:
        enc.configure_eval(enc.name, train_len, eval_cfg)
        enc.logit_scale = 1.0
        model.attention_block = None
        return
    model.attention_block = max(1, train_len // 2) if variant.endswith(BCA_SUFFIX) else None
    enc.configure_eval(base_variant(variant), length, eval_cfg)
    enc.logit_scale = logit_scale(variant, length, train_len)
