"""Evaluation-time variants: the same weights, scored another way, each its own report row.

A variant is a small object with its own settings (posbench/evaluation/variants/base.py); the evaluation
settings say which ones a run is scored with (``eval.rope_scaling``, ``eval.bca``,
``eval.temperature``, ``eval.variants`` for any other, e.g. a plug-in's), and ``rows`` turns them
into the ``Row`` objects of one model: its encoding, the variants that apply to it, and an
extension run's tag. A row renders its name in one place (``Row.name``) and the forward options it
asks for (``Row.options``); nothing is parsed back from a name except in ``parse_row``, for records
made before rows were recorded.

Built-ins (one module each, registered with ``@register``): ``rope_scaling`` (rope+yarn@16x),
``bca`` (+bca), ``temperature`` (+temp0.1), ``randpos`` (+randpos), and through ``eval.variants``
``rerope``, ``selfextend``, ``dca``, ``streaming`` (StreamingLLM), ``local`` (+swaL), ``logn``,
``floorlog``, ``headscale`` (per-head temperatures fitted at each length with the model frozen) and ``tuned``
(a RoPE scaling at the settings of least held-out loss, searched at each length). Another package's come through
the entry-point group ``posbench.variants`` or a ``module:attr`` path in ``eval.variants``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import ROPE_SCALINGS, evaluable_scalings
from posbench.core.errors import PosbenchError
from posbench.core.params import make_typed
from posbench.core.registry import Registry, plugin_code, subclass_check
from posbench.evaluation.variants.base import RowTemperature, Variant

VARIANTS: Registry[type[Variant]] = Registry("variant", "posbench.variants", "posbench.evaluation.variants", subclass_check(Variant))
register = VARIANTS.register


def make_variant(name: str, params: Mapping[str, Any] | None = None, prefix: str | None = None,
                 keys: Mapping[str, str] | None = None) -> Variant:
    """A variant by name with its checked settings (PosbenchError for an unknown name or value).
    ``prefix`` and ``keys``: where the user typed its settings, for the messages (make_typed)."""
    cls = VARIANTS.get(name)
    typed = make_typed("variant", name, cls.Params, dict(params or {}), prefix, keys)
    with plugin_code("variant", name, cls.__module__, "being built"):
        return cls(typed)


@dataclass(frozen=True)
class Row:
    """One row of the report from one model: ``encoding`` scored with ``variants`` (in order),
    ``tag`` the extension run's (``+yarn@4x+ft100``, inserted after the encoding's name)."""

    encoding: str
    variants: tuple[Variant, ...] = ()
    tag: str = ""

    @property
    def name(self) -> str:
        return self.encoding + self.tag + "".join(v.suffix() for v in self.variants)

    def options(self, base: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        for v in self.variants:
            base = v.options(base, length, train_len)
        return base

    def positions(self, length: int, max_position: int, batch: int):
        """Explicit positions for a batch of windows (None: 0..L-1)."""
        for v in self.variants:
            if (p := v.positions(length, max_position, batch)) is not None:
                return p
        return None

    def fit(self, model, ev, length: int, device) -> None:
        """Let each variant fit what it learns at ``length`` (HeadScale), before the row is scored there."""
        for v in self.variants:
            v.fit(model, ev, length, device)

    def fit_record(self, length: int) -> dict:
        """What the variants fitted at ``length``, for the records (variant name -> its record; empty: nothing)."""
        return {v.name: r for v in self.variants if (r := v.fit_record(length)) is not None}

    def undefined_reason(self, encoding, length: int) -> str | None:
        """Why this row has no score at ``length``: a variant's reason (it changes what the
        encoding is asked), else the encoding's."""
        reason = next((r for v in self.variants if (r := v.undefined_for(encoding, length))), None)
        return reason if reason is not None else encoding.undefined_reason(length)

    def record(self) -> dict:
        """What the row is, stored beside its name in every record (the report reads this)."""
        return {"encoding": self.encoding, "tag": self.tag, "variants": [v.record() for v in self.variants]}


def requested_by_setting(eval_cfg) -> dict[str, list[Variant]]:
    """The variants each evaluation setting asks for (``rope_scaling``, ``bca``, ``temperature``,
    ``variants``: the keys of ``eval``), in row order; settings that ask for none are left out."""
    out: dict[str, list[Variant]] = {}
    # the settings are translated into the variants' params: a refused value names the key typed
    for s in eval_cfg.rope_scaling:
        factor = None if ROPE_SCALINGS.get(s).dynamic else static_factor(eval_cfg)
        factor_key = "eval.rope_factor" if eval_cfg.rope_factor is not None else "eval.multiples"
        out.setdefault("rope_scaling", []).append(make_variant("rope_scaling", {"type": s, "factor": factor},
                                                               keys={"type": "eval.rope_scaling", "factor": factor_key}))
    if eval_cfg.bca:
        out["bca"] = [make_variant("bca", {"encodings": list(eval_cfg.bca)}, keys={"encodings": "eval.bca"})]
    if eval_cfg.temperature:
        out["temperature"] = [make_variant("temperature", {"c": float(c)}, keys={"c": "eval.temperature"})
                              for c in eval_cfg.temperature]
    for i, entry in enumerate(eval_cfg.variants):
        if isinstance(entry, str):
            name, params = entry, {}
        elif isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            name, params = entry["name"], {k: v for k, v in entry.items() if k != "name"}
        else:
            raise PosbenchError(f"eval.variants entry {entry!r} is neither a variant's name nor {{name: ..., <settings>}}")
        out.setdefault("variants", []).append(make_variant(name, params, prefix=f"eval.variants[{i}]"))
    return out


def requested(eval_cfg) -> list[Variant]:
    """The variants the evaluation settings ask for, in row order: RoPE scalings, blockwise causal
    attention, temperatures, then ``eval.variants`` (randomized positions are added per model)."""
    return [v for variants in requested_by_setting(eval_cfg).values() for v in variants]


# eval.bca names the encodings it is for (the default names xpos): the others get no row by design
NAMES_ITS_ENCODINGS = ("bca",)


def settings_without_rows(encoding, eval_cfg) -> list[str]:
    """The evaluation settings (``rope_scaling``, ``temperature``, ``variants``) that ask for
    variants of which none applies to ``encoding``: they would add no row to its run
    (``eval.rope_scaling=[yarn]`` on alibi). The variants decide (``Variant.applies_to``)."""
    return [key for key, variants in requested_by_setting(eval_cfg).items()
            if key not in NAMES_ITS_ENCODINGS and not any(v.applies_to(encoding) for v in variants)]


def static_factor(eval_cfg) -> float:
    """s of the static RoPE scalings: ``eval.rope_factor``, or the longest evaluated multiple."""
    return float(eval_cfg.rope_factor or max(1.0, max(eval_cfg.multiples)))


def rows(encoding, eval_cfg, tag: str = "") -> list[Row]:
    """The rows a model of ``encoding`` is scored as: its own, then one per variant that applies
    to it (each variant alone), then each row temperature (``+logn``, ``+floorlog``)
    under each requested window (``+logn+swaL``: that row's far-context control), then +randpos for
    a model trained on randomized positions. A row asked for twice is scored once."""
    out = [Row(encoding.name, (), tag)]
    applying = [v for v in requested(eval_cfg) if v.applies_to(encoding)]
    out += [Row(encoding.name, (v,), tag) for v in applying]
    # a temperature row's far-context control: the same temperature under each requested window
    # (``+logn+swaL`` beside ``+logn``), so that the report can say whether that row uses far context
    windows = [v for v in applying if getattr(v, "window", False)]
    out += [Row(encoding.name, (v, w), tag) for v in applying if isinstance(v, RowTemperature) for w in windows]
    randpos = make_variant("randpos", {"continuous": encoding.shape.continuous_positions})
    if randpos.applies_to(encoding):
        out.append(Row(encoding.name, (randpos,), tag))
    return list({row.name: row for row in reversed(out)}.values())[::-1]  # the first of equal names


def check_variant_settings(eval_cfg) -> None:
    """The variant keys of the evaluation settings: known names, values in range (building each
    variant runs its own checks)."""

    if bad := [s for s in eval_cfg.rope_scaling if s not in evaluable_scalings() and ":" not in s]:
        raise PosbenchError(f"unknown eval.rope_scaling {bad[0]!r}; valid: {', '.join(evaluable_scalings())}")
    if (factor := eval_cfg.rope_factor) is not None and not (factor >= 1 and math.isfinite(factor)):
        raise PosbenchError(f"eval.rope_factor must be at least 1{'' if factor < 1 else ' and finite'} (or null), "
                            f"got {factor:g}")
    seen: dict[str, Variant] = {}
    for v in requested(eval_cfg):  # each variant's Params.check ran when it was made
        suffix = v.suffix()  # also what a row's name is made of: renders, or refuses, here
        if suffix in seen and seen[suffix].record() != v.record():
            raise PosbenchError(f"two evaluation variants make the same rows ({suffix}): {seen[suffix].record()} "
                                f"and {v.record()}; give them settings that differ in their names")
        seen[suffix] = v


# -- names of extension runs, and reading old records ----------------------------------------------


_SUFFIX = re.compile(r"(\+temp[0-9.eE+-]+|\+bca|\+randpos)$")


def parse_row(name: str) -> dict:
    """A row record (``Row.record()``) recovered from a row's name, for records made before rows
    were recorded: ``xpos@4x+ft100+bca`` -> encoding xpos, tag @4x+ft100, variants [bca]."""
    variants = []
    while m := _SUFFIX.search(name):
        s = m.group(1)
        variants.insert(0, {"variant": "temperature", "c": float(s[5:])} if s.startswith("+temp")
                        else {"variant": s[1:]})
        name = name[: m.start()]
    ext = re.search(r"(\+[a-z_]+)?@[0-9.]+x\+ft\d+$", name)
    tag = ext.group(0) if ext else ""
    name = name[: ext.start()] if ext else name
    if "+" in name:
        name, scaling = name.split("+", 1)
        kind, _, factor = scaling.partition("@")
        variants.insert(0, {"variant": "rope_scaling", "type": kind, "factor": float(factor[:-1]) if factor else None})
    return {"encoding": name, "tag": tag, "variants": variants}


# the suffixes of built-in variants' names, and the two questions the report asks of a name; for
# records that carry no ``row`` (made before rows were recorded) these read the name itself
BCA_SUFFIX, RANDPOS_SUFFIX = "+bca", "+randpos"


def base_variant(name: str) -> str:
    """The row without evaluation-only variants (bca, temperature, randpos): ``alibi+temp0.1`` ->
    ``alibi``, ``rope+yarn@16x+bca`` -> ``rope+yarn@16x``."""
    return _SUFFIX.sub("", _SUFFIX.sub("", name))


def temperature_of(name: str) -> float | None:
    """c of an attention-temperature row (``alibi+temp0.1`` -> 0.1), None for any other."""
    m = re.search(r"\+temp([0-9.eE+-]+)$", name)
    return float(m.group(1)) if m else None


__all__ = ["BCA_SUFFIX", "RANDPOS_SUFFIX", "base_variant", "temperature_of",
           "AttentionOptions", "Row", "VARIANTS", "Variant", "check_variant_settings", "make_variant",
           "parse_row", "register", "requested", "requested_by_setting", "rows", "settings_without_rows", "static_factor"]
