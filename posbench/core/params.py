"""Typed, checked parameters of a plug-in (an encoding or a task) from its yaml mapping."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from posbench.core.errors import PosbenchError


def make_typed(group: str, name: str, cls: type, params: Mapping[str, Any]) -> Any:
    """Validate a yaml's keys, types and values against a ``Params`` dataclass.

    Types: OmegaConf converts and checks each value against the field's annotation. Values: every
    number must be positive, a ``base`` above 1, and fields named in ``Params.ZERO_OK`` may be 0
    (e.g. an initialisation scale); a plug-in can add its own checks in ``Params.check``.
    ``group``: the config group, for the messages (``encoding``, ``task``)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise PosbenchError(
            f"{group} {name!r} has no parameter {unknown[0]!r}; valid: {', '.join(sorted(fields)) or '(none)'}"
        )
    try:
        typed = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(cls), dict(params)))
    except ValidationError as e:
        kind = "a number" if "Float" in str(e) else "an integer" if "Integer" in str(e) else "of another type"
        raise PosbenchError(f"{group}.{e.full_key} must be {kind}, got {params.get(e.full_key)!r}") from None
    zero_ok = getattr(cls, "ZERO_OK", ())
    for key in fields:
        value = getattr(typed, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        ok = value > 1 if key == "base" else value >= 0 if key in zero_ok else value > 0
        what = "above 1" if key == "base" else "at least 0" if key in zero_ok else "positive"
        if not (ok and math.isfinite(value)):
            raise PosbenchError(f"{group}.{key} of {name!r} must be {what} (and finite), got {value:g}")
    if hasattr(typed, "check"):
        typed.check()
    return typed
