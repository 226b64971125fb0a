"""Registry of positional encodings.

Every module in this package that decorates a class with ``@register("name")`` is found
automatically, so adding an encoding is one file here plus one yaml in ``conf/encoding/``.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil
from typing import Any, Mapping

from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from posbench.encodings.base import ModelShape, PositionalEncoding
from posbench.errors import PosbenchError

REGISTRY: dict[str, type[PositionalEncoding]] = {}


def register(name: str):
    def deco(cls: type[PositionalEncoding]) -> type[PositionalEncoding]:
        if name in REGISTRY:
            raise RuntimeError(f"encoding {name!r} registered twice")
        cls.name = name
        REGISTRY[name] = cls
        return cls

    return deco


def _discover() -> None:
    for mod in pkgutil.iter_modules(__path__):
        if mod.name != "base":
            importlib.import_module(f"{__name__}.{mod.name}")


def available() -> list[str]:
    return sorted(REGISTRY)


def make_params(name: str, params: Mapping[str, Any]) -> Any:
    """Validate a yaml's keys, types and values against the encoding's ``Params`` dataclass.

    Types: OmegaConf converts and checks each value against the field's annotation. Values: every
    number must be positive, a ``base`` above 1, and fields named in ``Params.ZERO_OK`` may be 0
    (e.g. an initialisation scale); an encoding can add its own checks in ``Params.check``."""
    if name not in REGISTRY:
        raise PosbenchError(f"unknown encoding {name!r}; valid: {', '.join(available())}")
    cls = REGISTRY[name].Params
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise PosbenchError(
            f"encoding {name!r} has no parameter {unknown[0]!r}; valid: {', '.join(sorted(fields)) or '(none)'}"
        )
    try:
        typed = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(cls), dict(params)))
    except ValidationError as e:
        kind = "a number" if "Float" in str(e) else "an integer" if "Integer" in str(e) else "of another type"
        raise PosbenchError(f"encoding.{e.full_key} must be {kind}, got {params.get(e.full_key)!r}") from None
    zero_ok = getattr(cls, "ZERO_OK", ())
    for key in fields:
        value = getattr(typed, key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        ok = value > 1 if key == "base" else value >= 0 if key in zero_ok else value > 0
        what = "above 1" if key == "base" else "at least 0" if key in zero_ok else "positive"
        if not (ok and math.isfinite(value)):
            raise PosbenchError(f"encoding.{key} of {name!r} must be {what} (and finite), got {value:g}")
    if hasattr(typed, "check"):
        typed.check()
    return typed


def build_encoding(name: str, shape: ModelShape, params: Mapping[str, Any] | None = None) -> PositionalEncoding:
    params = make_params(name, params or {})  # raises a clear error for an unknown name first
    return REGISTRY[name](shape, params)


_discover()

__all__ = ["REGISTRY", "ModelShape", "PositionalEncoding", "available", "build_encoding", "register"]
