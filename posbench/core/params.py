"""Typed, checked parameters of a plug-in (an encoding, a task, an evaluation variant) from its yaml mapping.

A plug-in declares its parameters as a ``Params`` dataclass, and each field's check beside it::

    @dataclass
    class Params:
        slope: float = param(1.0, positive)        # 0, -1 and nan are refused
        base: float = param(10000.0, above(1))
        offset: float = -1.0                       # no rule: any finite number
        mode: str = param("fast", one_of("fast", "exact"))

        def check(self) -> None:                   # what involves several fields, in one line
            ...

``param(default, rule)`` is ``field(default=default, metadata={"check": rule})``; either form works.
A rule carries its words, so a refused value reads ``encoding.slope of 'mine' must be positive (and
finite), got 0``: every rule a plug-in is held to is one its author wrote.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from posbench.core.errors import PosbenchError
from posbench.core.registry import plugin_code


@dataclass(frozen=True)
class Rule:
    """A check of one value and the words that say it: a refused value reads ``... must be <words>``."""

    words: str
    holds: Callable[[Any], bool]


positive = Rule("positive", lambda v: v > 0)


def at_least(x: float) -> Rule:
    return Rule(f"at least {x:g}", lambda v: v >= x)


def above(x: float) -> Rule:
    return Rule(f"above {x:g}", lambda v: v > x)


def in_range(lo: float, hi: float) -> Rule:
    """Between ``lo`` and ``hi``, both included."""
    return Rule(f"in [{lo:g}, {hi:g}]", lambda v: lo <= v <= hi)


def one_of(*choices: Any) -> Rule:
    return Rule(f"one of {', '.join(map(str, choices))}", lambda v: v in choices)


def param(default: Any = dataclasses.MISSING, rule: Rule | None = None, **field_args: Any) -> Any:
    """A Params field with its rule: ``param(1.0, positive)``; ``param(rule=..., default_factory=list)``
    for a list (the rule then holds for each item)."""
    return dataclasses.field(default=default, metadata={"check": rule} if rule is not None else {}, **field_args)


def make_typed(group: str, name: str, cls: type, params: Mapping[str, Any],
               prefix: str | None = None, keys: Mapping[str, str] | None = None) -> Any:
    """Validate a yaml's keys, types and values against a ``Params`` dataclass.

    Types: OmegaConf converts and checks each value against the field's annotation (a default of
    the wrong type is the plug-in's mistake, and said so). Values: each field's declared rule
    (``param(1.0, positive)``: for a list, each item); a field without one gets only its type
    checked, and, for floats, finiteness (nan and inf are refused). Then ``Params.check()``, for
    what involves several fields.

    ``group``: the config group (``encoding``, ``task``, ``variant``); the messages name a field
    ``<group>.<field>``, or ``<prefix>.<field>`` where the user typed it below another key (a layer
    pattern's part: ``encoding.params.rope``), or ``keys[field]`` where a setting was translated
    into it (``eval.temperature`` holds the temperature variant's ``c``)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - set(fields))
    where = prefix or group
    if unknown:
        owner = f"{group} {name!r}" if prefix is None else f"{prefix} ({group} {name!r})"
        if not fields:
            raise PosbenchError(f"{owner} has no parameters, so {unknown[0]!r} cannot be set")
        raise PosbenchError(f"{owner} has no parameter {unknown[0]!r}; valid: {', '.join(sorted(fields))}")

    def label(key: str) -> str:
        return keys[key] if keys and key in keys else f"{where}.{key} of {name!r}"

    def plain(key: str) -> str:  # a type error names the key alone, as Hydra's own type errors do
        return keys[key] if keys and key in keys else f"{where}.{key}"

    # code of a plug-in's Params (defaults, rules, check) that raises is one line naming it
    with plugin_code(group, name, cls.__module__, "checking its Params"):
        schema = _schema(group, name, cls)
        try:
            typed = OmegaConf.to_object(OmegaConf.merge(schema, dict(params)))
        except ValidationError as e:
            kind = "a number" if "Float" in str(e) else "an integer" if "Integer" in str(e) else "of another type"
            raise PosbenchError(f"{plain(str(e.full_key))} must be {kind}, got {params.get(e.full_key)!r}") from None
        for key, f in fields.items():
            rule = f.metadata.get("check")
            if rule is not None and not isinstance(rule, Rule):
                raise PosbenchError(f"{group} {name!r}: the check of Params field {key!r} is {rule!r}, not a "
                                    "posbench.params rule (positive, at_least(x), above(x), in_range(a, b), one_of(...))")
            _check_value(label(key), getattr(typed, key), rule)
        if hasattr(typed, "check"):
            typed.check()
    return typed


def _schema(group: str, name: str, cls: type):
    """The structured config of a Params class; a default of the wrong type (``slope: float = "a"``)
    is one line naming the plug-in, the field and the default."""
    try:
        return OmegaConf.structured(cls)
    except ValidationError as e:
        field = next((f for f in dataclasses.fields(cls) if f.name == e.full_key), None)
        default = field.default if field is not None else None
        kind = getattr(field, "type", "its type")
        kind = getattr(kind, "__name__", kind)  # float, not <class 'float'> (a string under postponed annotations)
        raise PosbenchError(f"{group} {name!r}: the default of {e.full_key} in {cls.__module__}.{cls.__qualname__} "
                            f"is {default!r}, not {kind}; fix the plug-in's Params") from None


def _check_value(label: str, value: Any, rule: Rule | None) -> None:
    """One field's value (each item of a list) against its rule; floats must be finite either way."""
    for v in value if isinstance(value, (list, tuple)) else [value]:
        if v is None or isinstance(v, bool):
            continue
        number = isinstance(v, (int, float))
        finite = not (isinstance(v, float) and not math.isfinite(v))
        if rule is None:
            if not finite:
                raise PosbenchError(f"{label} must be finite, got {v:g}")
        elif not (finite and rule.holds(v)):
            shown = f"{v:g}" if number else repr(v)
            raise PosbenchError(f"{label} must be {rule.words}{' (and finite)' if number else ''}, got {shown}")
